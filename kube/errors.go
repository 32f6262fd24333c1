package kube

import (
	"errors"
	"fmt"
)

// NotOwnedError: an object with a spore's name exists but lacks sporectl's
// ownership marks. Nothing was changed; a person must look at it.
type NotOwnedError struct {
	Kind      string // Pod, PersistentVolumeClaim, Secret
	Namespace string
	Name      string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s/%s exists but is not marked as sporectl's; leaving it alone", e.Kind, e.Namespace, e.Name)
}

// ErrTerminating: the spore's pod is being deleted, so it can neither be
// reused nor replaced yet. The next reconcile pass tries again.
var ErrTerminating = errors.New("pod is terminating")

// ErrNoPodIP: the pod exists but has no IP yet (not scheduled or not
// started), so its bridge cannot be reached in-cluster.
var ErrNoPodIP = errors.New("pod has no IP yet")

// ErrClaimTerminating: the spore's claim is being deleted (a purge in
// flight); a new pod cannot use it.
var ErrClaimTerminating = errors.New("claim is terminating")
