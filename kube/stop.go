package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stop puts the spore to sleep: its pod goes, its claim and secret stay,
// so a wake mounts the same home. A spore with no pod is asleep already.
func (r *Runtime) Stop(ctx context.Context, id string) error {
	if err := r.deletePod(ctx, id); err != nil {
		return fmt.Errorf("stop spore %s: %w", id, err)
	}
	return nil
}

// Delete removes the spore's pod and secret, and its claim (the home)
// only when purgeHome is set. Every object is checked for ownership
// first; failures are joined so one stuck object does not hide another.
func (r *Runtime) Delete(ctx context.Context, id string, purgeHome bool) error {
	errs := []error{r.deletePod(ctx, id), r.deleteSecret(ctx, id)}
	if purgeHome {
		errs = append(errs, r.deleteClaim(ctx, id))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete spore %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) deletePod(ctx context.Context, id string) error {
	pods := r.core.pods()
	return r.deleteOwned(ctx, "Pod", id, func() (metav1.ObjectMeta, error) {
		p, err := pods.get(ctx, ObjectName(id))
		if err != nil {
			return metav1.ObjectMeta{}, err
		}
		return p.ObjectMeta, nil
	}, func(o metav1.DeleteOptions) error {
		return pods.delete(ctx, ObjectName(id), o)
	})
}

func (r *Runtime) deleteSecret(ctx context.Context, id string) error {
	secrets := r.core.secrets()
	return r.deleteOwned(ctx, "Secret", id, func() (metav1.ObjectMeta, error) {
		s, err := secrets.get(ctx, ObjectName(id))
		if err != nil {
			return metav1.ObjectMeta{}, err
		}
		return s.ObjectMeta, nil
	}, func(o metav1.DeleteOptions) error {
		return secrets.delete(ctx, ObjectName(id), o)
	})
}

func (r *Runtime) deleteClaim(ctx context.Context, id string) error {
	claims := r.core.claims()
	return r.deleteOwned(ctx, "PersistentVolumeClaim", id, func() (metav1.ObjectMeta, error) {
		c, err := claims.get(ctx, ObjectName(id))
		if err != nil {
			return metav1.ObjectMeta{}, err
		}
		return c.ObjectMeta, nil
	}, func(o metav1.DeleteOptions) error {
		return claims.delete(ctx, ObjectName(id), o)
	})
}

// deleteOwned reads the object, refuses if it is not ours, and deletes it
// with a UID precondition: if someone replaced it between the read and the
// delete, the server refuses (409) and the loop reads again, so sporectl
// never deletes an object it did not check. Gone already is success.
func (r *Runtime) deleteOwned(ctx context.Context, kind, id string,
	get func() (metav1.ObjectMeta, error), del func(metav1.DeleteOptions) error) error {
	name := ObjectName(id)
	for attempt := 0; ; attempt++ {
		var meta metav1.ObjectMeta
		err := retryTransient(ctx, func() (err error) {
			meta, err = get()
			return err
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s %s: %w", kind, name, err)
		}
		if !Owned(meta, id) {
			return &NotOwnedError{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
		}
		if meta.DeletionTimestamp != nil {
			return nil // being deleted already; observing shows Terminating
		}
		uid := meta.UID
		background := metav1.DeletePropagationBackground
		err = retryTransient(ctx, func() error {
			return del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
		})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < backoff.Steps:
			continue
		default:
			return fmt.Errorf("delete %s %s: %w", kind, name, err)
		}
	}
}
