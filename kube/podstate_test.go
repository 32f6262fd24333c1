package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
)

// The rows of the mapping that a real API server will not let the test
// kubelet produce (a pod with no phase, or one that exited 0) are checked
// on the pure function; the others run against the server in
// TestObserveMapsEveryPodState.
func TestPodObservationEdgeRows(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name string
		pod  corev1.Pod
		want reconcile.PodObservation
	}{
		{"no phase yet", corev1.Pod{}, reconcile.PodObservation{State: reconcile.PodPending}},
		{"exited 0", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
			reconcile.PodObservation{State: reconcile.PodFailed, Reason: ReasonCompleted}},
		{"terminating wins over running", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}, reconcile.PodObservation{State: reconcile.PodTerminating}},
		{"pod reason beats container reason", corev1.Pod{Status: corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "Evicted",
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error"}}}},
		}}, reconcile.PodObservation{State: reconcile.PodFailed, Reason: "Evicted"}},
		{"restarts add up over containers", corev1.Pod{Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 2}, {RestartCount: 3}},
		}}, reconcile.PodObservation{State: reconcile.PodRunning, Restarts: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := podObservation("x", &c.pod, now.Time)
			c.want.ID, c.want.Count = "x", 1
			assert.Equal(t, c.want, got)
		})
	}
}

// Ownership needs every mark; each missing one makes the object foreign.
func TestOwnedNeedsEveryMark(t *testing.T) {
	good := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:        "spore-a",
			Labels:      map[string]string{LabelManagedBy: ManagedByValue, LabelComponent: ComponentSpore, LabelSpore: "a"},
			Annotations: map[string]string{AnnotationOwner: OwnerValue},
		}
	}
	assert.True(t, Owned(good(), "a"))
	for name, spoil := range map[string]func(*metav1.ObjectMeta){
		"other name":          func(m *metav1.ObjectMeta) { m.Name = "spore-b" },
		"no managed-by":       func(m *metav1.ObjectMeta) { delete(m.Labels, LabelManagedBy) },
		"no component":        func(m *metav1.ObjectMeta) { delete(m.Labels, LabelComponent) },
		"spore label differs": func(m *metav1.ObjectMeta) { m.Labels[LabelSpore] = "b" },
		"no owner annotation": func(m *metav1.ObjectMeta) { m.Annotations = nil },
	} {
		m := good()
		spoil(&m)
		assert.False(t, Owned(m, "a"), name)
	}
}

// A container that ended is Exited with the end of its termination
// message (with FallbackToLogsOnError, its log's end); a running one is
// not, whatever it went through before.
func TestPodObservationExited(t *testing.T) {
	words := "level=INFO msg=start\nerror: no claude executable\nRun 'sporectl --help' for usage.\n"
	long := strings.Repeat("x", 10<<10) + "\nerror: the end\n"
	term := func(msg string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: msg}
	}
	cases := []struct {
		name   string
		cs     corev1.ContainerStatus
		exited bool
		log    string
	}{
		{"terminated", corev1.ContainerStatus{Name: containerName, State: corev1.ContainerState{Terminated: term(words)}}, true, words},
		{"crash loop", corev1.ContainerStatus{Name: containerName,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: term(words)}}, true, words},
		{"running after an old crash", corev1.ContainerStatus{Name: containerName,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: term(words)}}, false, ""},
		{"waiting for its first start", corev1.ContainerStatus{Name: containerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}, false, ""},
		{"a long message keeps its end", corev1.ContainerStatus{Name: containerName, State: corev1.ContainerState{Terminated: term(long)}}, true, long[len(long)-maxTerminationMessage:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{c.cs}}}
			got := podObservation("x", p, time.Now())
			assert.Equal(t, c.exited, got.Exited)
			assert.Equal(t, c.log, got.ExitLog)
		})
	}
	// A pod being deleted: its container ending is the deletion's doing
	// (SIGTERM, exit 143), not the bridge failing at start, so wake --wait
	// keeps waiting for the new pod instead of failing with exit 9.
	now := metav1.Now()
	gone := podObservation("x", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", Message: words}}}}}}, now.Time)
	assert.Equal(t, reconcile.PodTerminating, gone.State)
	assert.False(t, gone.Exited, "a terminating pod's bridge did not exit at start")
	assert.Empty(t, gone.ExitLog)
	assert.Equal(t, "the end", bridge.FatalError(podObservation("x", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed,
		ContainerStatuses: []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Terminated: term(long)}}}}}, now.Time).ExitLog))
}

// logOptions are kubectl logs' flags on the bridge container.
func TestLogOptions(t *testing.T) {
	three := int64(3)
	assert.Equal(t, &corev1.PodLogOptions{Container: containerName}, logOptions(reconcile.LogOptions{}))
	assert.Equal(t, &corev1.PodLogOptions{Container: containerName}, logOptions(reconcile.LogOptions{Tail: -1}))
	assert.Equal(t, &corev1.PodLogOptions{Container: containerName, Follow: true, Previous: true, TailLines: &three},
		logOptions(reconcile.LogOptions{Tail: 3, Follow: true, Previous: true}))
}

// A Running pod that is not Ready is Starting only while its bridge's
// container has started and started less than a minute ago (by the
// node's clock against ours, either way): then its bridge may already
// answer. A long-running pod whose readiness fails is not Starting: the
// pass reads it as before, not ready.
func TestPodObservationStarting(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	yes, no := true, false
	running := func(ago time.Duration, started *bool) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: containerName, Started: started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-ago))}}}
	}
	pod := func(ready bool, cs ...corev1.ContainerStatus) *corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
			ContainerStatuses: cs}}
	}
	crashLoop := corev1.ContainerStatus{Name: containerName, RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2}}}
	readyContainer := running(10*time.Second, &yes)
	readyContainer.Ready = true
	restarted := running(2*time.Second, &yes)
	restarted.RestartCount = 1
	restarted.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		starting bool
	}{
		{"started 0.1 s ago, not ready", pod(false, running(100*time.Millisecond, &yes)), true},
		{"started 59 s ago, not ready", pod(false, running(59*time.Second, &yes)), true},
		{"started a minute ago: readiness alone decides", pod(false, running(time.Minute, &yes)), false},
		{"ran for a day, readiness failing", pod(false, running(24*time.Hour, &yes)), false},
		{"ready: asked as ready, not starting", pod(true, running(time.Second, &yes)), false},
		{"running, not yet started (a startup probe)", pod(false, running(time.Second, &no)), false},
		{"running, started not reported", pod(false, running(time.Second, nil)), false},
		{"node's clock 30 s ahead", pod(false, running(-30*time.Second, &yes)), true},
		{"node's clock 2 min ahead", pod(false, running(-2*time.Minute, &yes)), false},
		{"no start time", pod(false, corev1.ContainerStatus{Name: containerName, Started: &yes,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), false},
		{"waiting to restart after a crash", pod(false, crashLoop), false},
		// The node stopped reporting: the node controller turned the
		// pod's Ready condition False, the container's status is the
		// kubelet's last (ready). Cut off, not coming up.
		{"node lost: pod not ready, its container still ready", pod(false, readyContainer), false},
		{"restarted after a crash 2 s ago", pod(false, restarted), true},
		{"another container started, not the bridge", pod(false, corev1.ContainerStatus{Name: "sidecar", Started: &yes,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := podObservation("x", c.pod, now)
			assert.Equal(t, reconcile.PodRunning, got.State)
			assert.Equal(t, c.starting, got.Starting)
		})
	}
	// Only a Running pod: one Pending, Terminating or Failed is never
	// Starting, whatever its container says.
	del := metav1.NewTime(now)
	for name, p := range map[string]*corev1.Pod{
		"pending":     {Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{running(time.Second, &yes)}}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del}, Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running(time.Second, &yes)}}},
		"failed":      {Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{running(time.Second, &yes)}}},
	} {
		assert.False(t, podObservation("x", p, now).Starting, name)
	}
	restartedObs := podObservation("x", pod(false, restarted), now)
	assert.Equal(t, "OOMKilled", restartedObs.Reason, "a restarted bridge coming up keeps its last termination")
	assert.False(t, restartedObs.Exited)
}
