package kube_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
)

// Every observed state, produced by moving real pods through the real
// API the way a scheduler and kubelet would, then read back with a single
// Observe.
func TestObserveMapsEveryPodState(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k := e.kubelet
	type step func(ctx context.Context, pod string) error
	run := func(ready bool) step {
		return func(ctx context.Context, p string) error { return k.Run(ctx, p, ready) }
	}
	crash := func(reason string, code int32) step {
		return func(ctx context.Context, p string) error { return k.Crash(ctx, p, reason, code) }
	}
	stop := func(ctx context.Context, p string) error { return e.rt.Stop(ctx, p[len("spore-"):]) }
	cases := []struct {
		id    string
		steps []step
		want  reconcile.PodObservation
	}{
		{"unscheduled", nil, reconcile.PodObservation{State: reconcile.PodPending}},
		{"scheduled", []step{k.Schedule}, reconcile.PodObservation{State: reconcile.PodPending}},
		{"ready", []step{k.Schedule, run(true)}, reconcile.PodObservation{State: reconcile.PodRunning, Ready: true}},
		{"not-ready", []step{k.Schedule, run(false)}, reconcile.PodObservation{State: reconcile.PodRunning}},
		{"oom", []step{k.Schedule, run(true), crash("OOMKilled", 137), crash("OOMKilled", 137)},
			reconcile.PodObservation{State: reconcile.PodRunning, Restarts: 2, Reason: "OOMKilled", Exited: true}},
		{"crashed", []step{k.Schedule, run(true), crash("Error", 1)},
			reconcile.PodObservation{State: reconcile.PodRunning, Restarts: 1, Reason: "Error", Exited: true}},
		{"recovered", []step{k.Schedule, run(true), crash("OOMKilled", 137), run(true)},
			reconcile.PodObservation{State: reconcile.PodRunning, Ready: true, Restarts: 1, Reason: "OOMKilled"}},
		{"evicted", []step{k.Schedule, run(true), k.Evict}, reconcile.PodObservation{State: reconcile.PodFailed, Reason: "Evicted", Exited: true}},
		{"failed", []step{k.Schedule, run(true), func(ctx context.Context, p string) error { return k.Fail(ctx, p, "Error") }},
			reconcile.PodObservation{State: reconcile.PodFailed, Reason: "Error", Exited: true}},
		{"node-lost", []step{k.Schedule, run(true), k.LoseNode}, reconcile.PodObservation{State: reconcile.PodUnknown}},
		{"deleted-by-other", []step{k.Schedule, run(true), k.DeleteAsSomeoneElse},
			reconcile.PodObservation{State: reconcile.PodTerminating, Ready: false}},
		{"gone", []step{k.Schedule, run(true), k.DeleteAsSomeoneElse, k.Finish}, reconcile.PodObservation{State: reconcile.PodAbsent}},
		{"asleep", []step{k.Schedule, run(true), stop, k.Finish}, reconcile.PodObservation{State: reconcile.PodAbsent}},
	}
	for _, c := range cases {
		e.start(t, c.id)
		for i, s := range c.steps {
			require.NoError(t, s(ctx, kube.ObjectName(c.id)), "%s: step %d", c.id, i)
		}
	}

	cfg, counter := kubetest.Counting(e.saCfg)
	rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)
	obs, err := rt.Observe(ctx, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 2, counter.Requests(), "one LIST of pods, one of claims")

	require.Len(t, obs.Spores, len(cases))
	for _, c := range cases {
		want := c.want
		want.ID, want.Owned = c.id, true
		if want.State != reconcile.PodAbsent {
			want.Count = 1
		}
		assert.Equal(t, want, obs.Spores[c.id], c.id)
	}
	fleetBytes := counter.ResponseBytes()

	// Named: the same two LISTs, selecting those spores' objects alone.
	counter.Reset()
	named, err := rt.Observe(ctx, []string{"oom", "asleep", "never-made"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, counter.Requests(), "one LIST of pods, one of claims")
	assert.Equal(t, map[string]reconcile.PodObservation{"oom": obs.Spores["oom"], "asleep": obs.Spores["asleep"]}, named.Spores)
	assert.Less(t, counter.ResponseBytes(), fleetBytes/3, "the API server sent the named spores' objects, not the fleet's (%d bytes of %d)", counter.ResponseBytes(), fleetBytes)

	// More than one selector holds: the fleet is listed, the named kept.
	many := []string{"oom"}
	for i := range 64 {
		many = append(many, fmt.Sprintf("absent-%d", i))
	}
	named, err = rt.Observe(ctx, many)
	require.NoError(t, err)
	assert.Equal(t, map[string]reconcile.PodObservation{"oom": obs.Spores["oom"]}, named.Spores)
}

// Two pods labelled for one spore are counted, not chosen between, and
// Stop touches only the pod carrying every ownership mark.
func TestObserveReportsTwoPodsForOneSpore(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "twin")
	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-twin", metav1.GetOptions{})
	require.NoError(t, err)
	copyPod := pod.DeepCopy()
	copyPod.ObjectMeta = metav1.ObjectMeta{Name: "spore-twin-copy", Labels: pod.Labels, Annotations: pod.Annotations}
	_, err = e.admin.CoreV1().Pods(e.ns).Create(ctx, copyPod, metav1.CreateOptions{})
	require.NoError(t, err)

	obs := e.observe(t)["twin"]
	assert.Equal(t, 2, obs.Count)
	assert.True(t, obs.Owned, "the primary is the one with the spore's own name")

	require.NoError(t, e.rt.Stop(ctx, "twin"))
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-twin-copy", metav1.GetOptions{})
	require.NoError(t, err, "the copy is not ours to delete")
	obs = e.observe(t)["twin"]
	assert.Equal(t, 1, obs.Count)
	assert.False(t, obs.Owned, "the remaining pod lacks the spore's name")
}

// Objects with our name but not our marks are never changed or deleted.
func TestNeverTouchesObjectsItDoesNotOwn(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	foreign, err := e.rt.PodSpecForTest(spore("stranger"))
	require.NoError(t, err)
	foreign.Labels = map[string]string{"app": "someone-else"}
	foreign.Annotations = nil
	created, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)

	var notOwned *kube.NotOwnedError
	err = e.rt.Start(ctx, spore("stranger"), reconcile.Launch{Creds: creds("stranger")})
	require.ErrorAs(t, err, &notOwned)
	assert.Equal(t, "Pod", notOwned.Kind)
	require.ErrorAs(t, e.rt.Stop(ctx, "stranger"), &notOwned)
	delErr := e.rt.Delete(ctx, "stranger", true)
	require.ErrorAs(t, delErr, &notOwned)

	got, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-stranger", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.UID, got.UID)
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion, "left exactly as it was")
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-stranger", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "Start stops at the foreign pod before making anything")
	_, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-stranger", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "Start stops at the foreign pod before making anything")
	assert.NotContains(t, delErr.Error(), creds("stranger").BridgeToken)
}

// Orphans are reported from an observation and the store's spores, and
// observing deletes nothing.
func TestOrphansAreReportedNotDeleted(t *testing.T) {
	e := newEnv(t)
	e.start(t, "kept", "orphan")
	_, orphans, err := reconcile.Observe(t.Context(), e.rt, []string{"kept"})
	require.NoError(t, err)
	assert.Equal(t, []string{"orphan"}, orphans)
	_, err = e.admin.CoreV1().Pods(e.ns).Get(t.Context(), "spore-orphan", metav1.GetOptions{})
	require.NoError(t, err)
}
