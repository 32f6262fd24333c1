package kubetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// CrashSaying is Crash with the termination message the kubelet records
// (a container's /dev/termination-log, or with FallbackToLogsOnError the
// end of its log when it failed): a bridge's last words.
func (k *Kubelet) CrashSaying(ctx context.Context, name, reason string, exitCode int32, message string) error {
	if err := k.Crash(ctx, name, reason, exitCode); err != nil {
		return err
	}
	return k.status(ctx, name, func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if t := p.Status.ContainerStatuses[i].LastTerminationState.Terminated; t != nil {
				t.Message = message
			}
		}
	})
}
