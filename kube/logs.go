package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Logs copies the bridge container's log (what the kubelet kept, not the
// conversation) to w. Only a pod of ours is read.
func (r *Runtime) Logs(ctx context.Context, id string, w io.Writer) error {
	pods := r.client.CoreV1().Pods(r.opts.Namespace)
	p, err := pods.Get(ctx, ObjectName(id), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("logs of spore %s: read pod: %w", id, err)
	}
	if !Owned(p.ObjectMeta, id) {
		return fmt.Errorf("logs of spore %s: %w", id, &NotOwnedError{Kind: "Pod", Namespace: p.Namespace, Name: p.Name})
	}
	rc, err := pods.GetLogs(p.Name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("logs of spore %s: %w", id, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("logs of spore %s: copy: %w", id, err)
	}
	return nil
}
