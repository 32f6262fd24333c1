package kube

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Start creates what is missing of the spore's claim, secret and pod, the
// pod last, so a pod never waits on a claim or secret that is not there.
// Each step checks ownership: an object that exists already and is ours
// is success, one that is not ours stops the start. Waking a sleeping
// spore is the same call: the claim exists and the new pod names it.
//
// A spore whose pod runs already is left exactly as it is, Secret included:
// the pod read its tokens when it started, so rotating them under it would
// lock sporectl out of its bridge. Tokens change only with a new pod.
//
// Kubernetes has no lock for this: two starts racing each other may both
// ask l.Creds, and the Secret keeps the last one's tokens. A new pod
// carries l.Identity in its environment; a running pod keeps the one it
// started with.
//
// The API server's CPU bounds how fast a fleet wakes, so each step asks
// first the request most likely to settle it (start_wake.go): a wake costs four
// requests (pod read, claim read, Secret patch, pod create), as a first
// start does (pod read, three creates).
func (r *Runtime) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	running, err := r.podRunning(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	if running {
		return nil
	}
	claim, err := r.opts.ClaimFor(s)
	if err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	pod, err := r.opts.PodFor(s, l.Identity)
	if err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	asleep := likelyAsleep(l)
	creds, err := r.claimAndCreds(ctx, s.ID, asleep, claim, l.Creds)
	if err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	want := r.opts.SecretFor(s, creds)
	if asleep {
		// Its Secret is most likely there, holding old tokens.
		err = r.patchSecret(ctx, s.ID, want)
	} else {
		err = r.ensureSecret(ctx, s.ID, want)
	}
	if err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	if err := r.ensurePod(ctx, s.ID, pod); err != nil {
		return fmt.Errorf("start spore %s: %w", s.ID, err)
	}
	return nil
}

// claimAndCreds makes sure of the claim and asks for the credentials at
// the same time: the pod is not running, so the start is about to make
// one, and recording the token (a store transaction) need not wait for a
// round trip to the API server. A claim that fails the start leaves the
// store with the hash of a token no pod holds, which no running spore
// depends on; the next start records another (docs/architecture.md,
// "Which writes are apart, and why").
func (r *Runtime) claimAndCreds(ctx context.Context, id string, asleep bool, claim *corev1.PersistentVolumeClaim, src reconcile.CredentialSource) (reconcile.Credentials, error) {
	claimErr := make(chan error, 1)
	go func() { claimErr <- r.ensureClaimFor(ctx, id, asleep, claim) }()
	creds, err := src.Credentials(ctx)
	if cerr := <-claimErr; cerr != nil {
		return reconcile.Credentials{}, cerr
	}
	if err != nil {
		return reconcile.Credentials{}, fmt.Errorf("credentials: %w", err)
	}
	return creds, nil
}

// ensureClaim creates the claim, or checks that the existing one is ours
// and not going away.
func (r *Runtime) ensureClaim(ctx context.Context, id string, want *corev1.PersistentVolumeClaim) error {
	claims := r.core.claims()
	err := withRetry(ctx, transient, func() error {
		_, err := claims.create(ctx, want)
		return err
	})
	if !apierrors.IsAlreadyExists(err) {
		return wrap(err, "create claim %s", want.Name)
	}
	var got *corev1.PersistentVolumeClaim
	err = withRetry(ctx, transient, func() (err error) {
		got, err = claims.get(ctx, want.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("read existing claim %s: %w", want.Name, err)
	}
	return claimUsable(got, id)
}

// claimUsable refuses a claim that is not ours or is going away.
func claimUsable(got *corev1.PersistentVolumeClaim, id string) error {
	if !Owned(got.ObjectMeta, id) {
		return &NotOwnedError{Kind: "PersistentVolumeClaim", Namespace: got.Namespace, Name: got.Name}
	}
	if got.DeletionTimestamp != nil {
		// A pod mounting a claim that is going away would never start.
		return fmt.Errorf("claim %s: %w", got.Name, ErrClaimTerminating)
	}
	return nil
}

// ensureSecret creates the secret, or brings an existing one of ours up
// to date: tokens rotate, and a pod started after the rotation must read
// the new ones.
func (r *Runtime) ensureSecret(ctx context.Context, id string, want *corev1.Secret) error {
	secrets := r.core.secrets()
	err := withRetry(ctx, transient, func() error {
		_, err := secrets.create(ctx, want)
		return err
	})
	if !apierrors.IsAlreadyExists(err) {
		return wrap(err, "create secret %s", want.Name)
	}
	err = retry.RetryOnConflict(backoff, func() error {
		var got *corev1.Secret
		err := retryTransient(ctx, func() (err error) {
			got, err = secrets.get(ctx, want.Name)
			return err
		})
		if err != nil {
			return err
		}
		if !Owned(got.ObjectMeta, id) {
			return &NotOwnedError{Kind: "Secret", Namespace: got.Namespace, Name: got.Name}
		}
		if sameData(got.Data, want.Data) && maps.Equal(got.Labels, want.Labels) {
			return nil
		}
		got.Data, got.Labels = want.Data, want.Labels
		return retryTransient(ctx, func() error {
			_, err := secrets.update(ctx, got)
			return err
		})
	})
	return wrap(err, "update secret %s", want.Name)
}

// ensurePod creates the pod. One that exists and is ours is success even
// if its spec differs: replacing a running spore would cut off the step it
// is on, so a changed spec takes effect at the next sleep and wake.
func (r *Runtime) ensurePod(ctx context.Context, id string, want *corev1.Pod) error {
	pods := r.core.pods()
	err := withRetry(ctx, transient, func() error {
		_, err := pods.create(ctx, want)
		return err
	})
	if !apierrors.IsAlreadyExists(err) {
		return wrap(err, "create pod %s", want.Name)
	}
	var got *corev1.Pod
	err = retryTransient(ctx, func() (err error) {
		got, err = pods.get(ctx, want.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("read existing pod %s: %w", want.Name, err)
	}
	if !Owned(got.ObjectMeta, id) {
		return &NotOwnedError{Kind: "Pod", Namespace: got.Namespace, Name: got.Name}
	}
	if got.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s: %w", got.Name, ErrTerminating)
	}
	return nil
}

// podRunning reports whether the spore's pod exists, is ours and is not
// going away. A pod that is not ours, or is terminating, is an error: a
// start could not succeed, so nothing may be touched.
func (r *Runtime) podRunning(ctx context.Context, id string) (bool, error) {
	var got *corev1.Pod
	err := retryTransient(ctx, func() (err error) {
		got, err = r.core.pods().get(ctx, ObjectName(id))
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read pod %s: %w", ObjectName(id), err)
	case !Owned(got.ObjectMeta, id):
		return false, &NotOwnedError{Kind: "Pod", Namespace: got.Namespace, Name: got.Name}
	case got.DeletionTimestamp != nil:
		return false, fmt.Errorf("pod %s: %w", got.Name, ErrTerminating)
	case got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded:
		// An evicted or finished pod never runs again. Remove exactly this
		// pod (UID precondition); its replacement can be created once the
		// node lets it go.
		uid := got.UID
		err := retryTransient(ctx, func() error {
			return r.core.pods().delete(ctx, got.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("remove %s pod %s: %w", got.Status.Phase, got.Name, err)
		}
		return false, nil
	}
	return true, nil
}

func retryTransient(ctx context.Context, fn func() error) error { return withRetry(ctx, transient, fn) }

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// wrap adds what was being done to a non-nil error.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
