package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			got := podObservation("x", &c.pod)
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
