package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sporectl/sporectl/reconcile"
)

// A fleet wakes as fast as the API server answers, and its CPU is the
// bound (docs/performance.md, wake throughput): every request a start
// saves is a start more a second. Create-first costs two requests for an
// object that exists (the refused create, then the read that checks it is
// ours) and the Secret a third (its update). A sleeping spore has both its
// claim and its Secret, so a wake asks for them as they most likely are:
// it reads the claim, and patches the Secret with a patch that holds only
// if the Secret is ours. A guess that is wrong costs one request more,
// never a different outcome: what is missing is still created, and what
// is not ours still stops the start.

// ranBefore is what a credential source may know of the spore's past:
// the pass's (reconcile's issued) says whether a token was recorded for
// it before this start.
type ranBefore interface{ RanBefore() bool }

// likelyAsleep says the spore has most likely run before, so its claim
// and Secret are there: its credential source says a token was recorded
// for it before. A spore that ran but lost its objects since (deleted
// with its home kept: no Secret) costs a request more; a source that
// cannot say is taken for a first start.
func likelyAsleep(l reconcile.Launch) bool {
	rb, ok := l.Creds.(ranBefore)
	return ok && rb.RanBefore()
}

// ensureClaimFor is ensureClaim, asked read-first when the spore has
// most likely run before.
func (r *Runtime) ensureClaimFor(ctx context.Context, id string, asleep bool, want *corev1.PersistentVolumeClaim) error {
	if !asleep {
		return r.ensureClaim(ctx, id, want)
	}
	var got *corev1.PersistentVolumeClaim
	err := retryTransient(ctx, func() (err error) {
		got, err = r.core.claims().get(ctx, want.Name)
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return r.ensureClaim(ctx, id, want)
	case err != nil:
		return fmt.Errorf("read claim %s: %w", want.Name, err)
	}
	return claimUsable(got, id)
}

// patchSecret brings the Secret of a spore that ran before up to date in
// one request: a JSON patch whose tests hold only on a Secret that is
// ours (the labels and annotation Owned checks; the name is the
// request's), so the server refuses it, whole, on anyone else's. A
// Secret that is missing, or a patch refused, goes the way of
// ensureSecret, which creates it or says whose it is.
func (r *Runtime) patchSecret(ctx context.Context, id string, want *corev1.Secret) error {
	patch, err := ownedSecretPatch(id, want)
	if err != nil {
		return fmt.Errorf("patch secret %s: %w", want.Name, err)
	}
	err = retryTransient(ctx, func() error {
		return r.core.secrets().request("PATCH").Name(want.Name).
			SetHeader("Content-Type", string(types.JSONPatchType)).
			Body(patch).Do(ctx).Error()
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || unprocessable(err):
		// Missing, or a test failed: not ours, or not as we left it.
		return r.ensureSecret(ctx, id, want)
	case apierrors.IsForbidden(err):
		// A Role from before sporectl patched (kube/deploy/rbac.yaml): the
		// wake still works, at the old cost, until the Role is applied.
		return r.ensureSecret(ctx, id, want)
	}
	return fmt.Errorf("patch secret %s: %w", want.Name, err)
}

// ownedSecretPatch is the JSON patch (RFC 6902) that checks the Secret is
// spore id's and then sets want's labels and data.
func ownedSecretPatch(id string, want *corev1.Secret) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	ptr := func(field, key string) string {
		// RFC 6901: "~" is "~0" and "/" is "~1" inside a key.
		return "/metadata/" + field + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	}
	ops := []op{
		{"test", ptr("labels", LabelManagedBy), ManagedByValue},
		{"test", ptr("labels", LabelComponent), ComponentSpore},
		{"test", ptr("labels", LabelSpore), id},
		{"test", ptr("annotations", AnnotationOwner), OwnerValue},
		// add replaces a member that is there (RFC 6902, 4.1).
		{"add", "/metadata/labels", want.Labels},
		{"add", "/data", want.Data}, // []byte is base64 in JSON, as Secret data is
	}
	return json.Marshal(ops)
}

// unprocessable is the server's answer to a JSON patch whose test failed
// (422 with no reason of its own).
func unprocessable(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusUnprocessableEntity
}
