package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Logs copies the bridge container's log (what the kubelet kept: the
// bridge's and its agent's stderr, not the conversation) to w through the
// API server's pods/log, as opt says: the previous container's, the last
// Tail lines, following until ctx ends. Only a pod of ours is read; the
// spore's tokens (from its Secret, when it can be read) never reach w.
func (r *Runtime) Logs(ctx context.Context, id string, opt reconcile.LogOptions, w io.Writer) error {
	pods := r.core.pods()
	p, err := pods.get(ctx, ObjectName(id))
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("logs of spore %s: no pod (it is not awake): %w", id, state.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("logs of spore %s: read pod: %w", id, err)
	}
	if !Owned(p.ObjectMeta, id) {
		return fmt.Errorf("logs of spore %s: %w", id, &NotOwnedError{Kind: "Pod", Namespace: p.Namespace, Name: p.Name})
	}
	rc, err := r.core.podLogs(p.Name, logOptions(opt)).Stream(ctx)
	if err != nil {
		return fmt.Errorf("logs of spore %s: %w", id, err)
	}
	defer rc.Close()
	rw := reconcile.NewRedactor(w, r.secrets(ctx, id))
	_, err = io.Copy(rw, rc)
	if ferr := rw.Flush(); err == nil {
		err = ferr
	}
	if ctx.Err() != nil {
		// Ended by the caller (Ctrl-C on a followed log): not a failure
		// of the copy.
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("logs of spore %s: copy: %w", id, err)
	}
	return nil
}

// logOptions are kubectl logs' for opt, on the bridge container.
func logOptions(opt reconcile.LogOptions) *corev1.PodLogOptions {
	po := &corev1.PodLogOptions{Container: containerName, Follow: opt.Follow, Previous: opt.Previous}
	if opt.Tail > 0 {
		n := int64(opt.Tail)
		po.TailLines = &n
	}
	return po
}

// secrets are the spore's tokens from its Secret; none when it cannot be
// read (the logs are copied all the same: the bridge writes no token).
func (r *Runtime) secrets(ctx context.Context, id string) []string {
	s, err := r.core.secrets().get(ctx, ObjectName(id))
	if err != nil || !Owned(s.ObjectMeta, id) {
		return nil
	}
	return []string{string(s.Data[SecretKeyBridgeToken]), string(s.Data[SecretKeyAPIToken])}
}
