package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/reconcile"
)

// Termination reasons sporectl reports besides the kubelet's own
// container reasons (OOMKilled, Error, ContainerCannotRun, …).
const (
	ReasonEvicted   = "Evicted"
	ReasonCompleted = "Completed" // the bridge exited 0, which it never should
)

// podObservation maps one pod, seen at now, to what reconcile needs. It
// is a pure function of the pod and now so the mapping table in
// docs/runtimes.md can be tested line by line:
//
//	deletionTimestamp set          -> Terminating (never Exited)
//	phase Pending (or not yet set) -> Pending
//	phase Running                  -> Running, Ready from the Ready condition,
//	                                  Starting when not Ready and the bridge's
//	                                  container started less than a minute ago
//	phase Failed / Succeeded       -> Failed
//	phase Unknown (node lost)      -> Unknown
func podObservation(id string, p *corev1.Pod, now time.Time) reconcile.PodObservation {
	o := reconcile.PodObservation{
		ID:       id,
		Owned:    Owned(p.ObjectMeta, id),
		Count:    1,
		Restarts: restarts(p),
		Reason:   lastReason(p),
	}
	o.Exited, o.ExitLog = exited(p)
	switch {
	case p.DeletionTimestamp != nil:
		o.State = reconcile.PodTerminating
		// Its container ends because the pod is being deleted (SIGTERM):
		// that is not the bridge exiting at start, and its last words are
		// not a reason to show. The pod is the old incarnation going away.
		o.Exited, o.ExitLog = false, ""
	case p.Status.Phase == corev1.PodPending || p.Status.Phase == "":
		o.State = reconcile.PodPending
	case p.Status.Phase == corev1.PodRunning:
		o.State = reconcile.PodRunning
		o.Ready = ready(p)
		o.Starting = !o.Ready && startedRecently(p, now)
	case p.Status.Phase == corev1.PodFailed:
		o.State = reconcile.PodFailed
	case p.Status.Phase == corev1.PodSucceeded:
		o.State = reconcile.PodFailed
		if o.Reason == "" {
			o.Reason = ReasonCompleted
		}
	default:
		o.State = reconcile.PodUnknown
	}
	return o
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startedRecently reports whether the bridge's container runs, has
// started (the kubelet's containerStatuses[].started: with no startup
// probe, as soon as it runs), is not ready by its own status yet, and
// started within reconcile.BridgeStartingWindow of now: its bridge may
// answer before the readiness probe's next run makes the pod Ready.
//
// The container's own ready matters: when its node stops reporting, the
// node controller turns the pod's Ready condition False and leaves the
// container statuses as the kubelet last wrote them (ready), and such a
// pod is not coming up but cut off, whose bridge the pass must not take
// for Up. startedAt is the node's clock, now ours: a skew of more than
// the window either way reads as not recent, and the pod's readiness
// decides alone, as it did before.
func startedRecently(p *corev1.Pod, now time.Time) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != containerName {
			continue
		}
		r := c.State.Running
		if r == nil || c.Ready || c.Started == nil || !*c.Started || r.StartedAt.IsZero() {
			return false
		}
		age := now.Sub(r.StartedAt.Time)
		return age > -reconcile.BridgeStartingWindow && age < reconcile.BridgeStartingWindow
	}
	return false
}

func restarts(p *corev1.Pod) int {
	n := 0
	for _, c := range p.Status.ContainerStatuses {
		n += int(c.RestartCount)
	}
	return n
}

// lastReason is why the pod or its container last stopped. A pod-level
// reason (Evicted) explains more than the container's, which the kubelet
// often leaves as a generic Error when it kills for eviction.
func lastReason(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.Reason != "" {
			return t.Reason
		}
		if t := c.LastTerminationState.Terminated; t != nil && t.Reason != "" {
			return t.Reason
		}
	}
	return ""
}

// maxTerminationMessage bounds what is taken of a container's termination
// message (the kubelet keeps at most 4 KiB of it, or of the log's end with
// FallbackToLogsOnError).
const maxTerminationMessage = 4 << 10

// exited reports whether the bridge container's process ended and no
// new one runs yet: terminated, or waiting to be restarted after it
// terminated (CrashLoopBackOff). msg is the end of its termination message:
// with terminationMessagePolicy FallbackToLogsOnError, the end of its log
// when it failed, where the bridge's fatal error is its last line.
func exited(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != containerName {
			continue
		}
		t := c.State.Terminated
		if t == nil && c.State.Waiting != nil {
			t = c.LastTerminationState.Terminated
		}
		if t == nil {
			return false, ""
		}
		msg := t.Message
		if len(msg) > maxTerminationMessage {
			msg = msg[len(msg)-maxTerminationMessage:]
		}
		return true, msg
	}
	return false, ""
}
