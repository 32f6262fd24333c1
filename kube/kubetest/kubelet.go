package kubetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Kubelet stands in for the scheduler and a node: it writes pod status
// through the real API the way they would (a binding, then status updates
// with the resourceVersion read just before, retried on conflict), so the
// runtime sees real server semantics. Nothing runs.
type Kubelet struct {
	Client    kubernetes.Interface
	Namespace string
	Node      string
	// IP, when set, is the pod IP every started pod gets (a bridge test
	// listens there); otherwise each pod gets its own 10.244/16 address.
	IP     string
	nextIP atomic.Uint32
}

// Schedule binds the pod to the node, as the scheduler does.
func (k *Kubelet) Schedule(ctx context.Context, name string) error {
	err := k.Client.CoreV1().Pods(k.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.node()},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("bind pod %s: %w", name, err)
	}
	return nil
}

// Run reports the pod's containers running, ready or not.
func (k *Kubelet) Run(ctx context.Context, name string, ready bool) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		now := metav1.Now()
		if p.Status.PodIP == "" {
			ip := k.IP
			if ip == "" {
				n := k.nextIP.Add(1)
				ip = fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)
			}
			p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
			p.Status.HostIP, p.Status.HostIPs = "10.0.0.1", []corev1.HostIP{{IP: "10.0.0.1"}}
			p.Status.StartTime = &now
		}
		p.Status.Phase = corev1.PodRunning
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			cs.Ready = ready
			cs.Started = &ready
		}
		setReady(p, ready)
	})
}

// Crash reports the container killed for reason (OOMKilled, Error) and
// restarted, as in a CrashLoopBackOff: still Running, not ready.
func (k *Kubelet) Crash(ctx context.Context, name, reason string, exitCode int32) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		now := metav1.Now()
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, StartedAt: now, FinishedAt: now,
			}}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			cs.RestartCount++
			cs.Ready = false
		}
		p.Status.Phase = corev1.PodRunning
		setReady(p, false)
	})
}

// Evict fails the pod the way the kubelet does under node pressure.
func (k *Kubelet) Evict(ctx context.Context, name string) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
		p.Status.Message = "The node was low on resource: memory."
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "Error", StartedAt: now, FinishedAt: now,
			}}
			cs.Ready = false
		}
		setReady(p, false)
	})
}

// Fail ends the pod with its container terminated for reason.
func (k *Kubelet) Fail(ctx context.Context, name, reason string) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodFailed
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: reason, StartedAt: now, FinishedAt: now,
			}}
			cs.Ready = false
		}
		setReady(p, false)
	})
}

// Succeed ends the pod with its container exited 0 (phase Succeeded), as
// when the bridge returns from main.
func (k *Kubelet) Succeed(ctx context.Context, name string) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now,
			}}
			cs.Ready = false
		}
		setReady(p, false)
	})
}

// LoseNode marks the pod's phase Unknown, as when its node stopped
// reporting.
func (k *Kubelet) LoseNode(ctx context.Context, name string) error {
	return k.status(ctx, name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodUnknown
		setReadyStatus(p, corev1.ConditionUnknown)
	})
}

// DeleteAsSomeoneElse deletes the pod with its normal grace period, as a
// person or a controller would; a bound pod then stays Terminating until
// Finish.
func (k *Kubelet) DeleteAsSomeoneElse(ctx context.Context, name string) error {
	return k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

// Finish removes a terminating pod for good, as the kubelet does once its
// containers stopped.
func (k *Kubelet) Finish(ctx context.Context, name string) error {
	zero := int64(0)
	return k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

func (k *Kubelet) node() string {
	if k.Node == "" {
		return "kubetest-node"
	}
	return k.Node
}

// status reads the pod, lets change edit its status, and writes it back
// with the resourceVersion it read, retrying when someone wrote between.
func (k *Kubelet) status(ctx context.Context, name string, change func(*corev1.Pod)) error {
	pods := k.Client.CoreV1().Pods(k.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, ImageID: "docker.io/" + c.Image,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
				})
			}
		}
		change(p)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update status of pod %s: %w", name, err)
	}
	return nil
}

func setReady(p *corev1.Pod, ready bool) {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	setReadyStatus(p, s)
}

func setReadyStatus(p *corev1.Pod, s corev1.ConditionStatus) {
	now := metav1.NewTime(time.Now())
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		found := false
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == t {
				if c.Status != s {
					c.Status, c.LastTransitionTime = s, now
				}
				found = true
			}
		}
		if !found {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
		}
	}
}
