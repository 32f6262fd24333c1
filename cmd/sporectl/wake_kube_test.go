package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sporectl/sporectl/state"
)

// TestKubeWakeWhileTheOldPodTerminates: `sleep`, then `wake` while the
// old pod is still terminating, with the real binary against the real API
// server (a test kubelet holds the pod Terminating until it confirms, a
// real bridge runs at the pod's address). The spore waits for the old pod
// — never Dead, never Diverged — and once it is gone the new pod is a
// first start: restarts 0, no crash, no backoff, the breaker untouched,
// Healthy. A plain wake leaves the start to the next reconcile; wake
// --wait waits through the old pod's end and succeeds. (It printed
// "woken", went Diverged, then "Dead: nothing running", and the start
// after it counted a crash; wake --wait never started it.)
func TestKubeWakeWhileTheOldPodTerminates(t *testing.T) {
	k := newKubeSpore(t, "nap-kube")
	r, cs, ns, ctx, kubelet, id, name := k.r, k.cs, k.ns, k.ctx, k.kubelet, k.id, k.name
	runPod, pod := k.runPod, k.pod
	newPod := func(old types.UID) {
		t.Helper()
		require.Eventually(t, func() bool {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && got.UID != old && got.DeletionTimestamp == nil
		}, 30*time.Second, 50*time.Millisecond, "no new pod")
	}
	// asleepTerminating puts the spore to sleep; its pod terminates and
	// its bridge ends with it, but the node has not confirmed yet.
	asleepTerminating := func(b *podBridge) types.UID {
		t.Helper()
		old := pod().UID
		r.ok("sleep", id)
		require.NotNil(t, pod().DeletionTimestamp, "terminating until the node confirms")
		b.kill(t)
		return old
	}
	// waiting: every command on the way sees the spore waiting for its
	// old pod, and nothing replaces it.
	waiting := func(old types.UID) {
		t.Helper()
		s, code := r.status(id)
		require.Equal(t, 3, code)
		require.Equal(t, "Suspect", s.Effective, "%+v", s)
		require.Equal(t, "Terminating", s.Observed.Pod)
		require.Contains(t, s.Reason, "old pod")
		require.Equal(t, old, pod().UID, "the terminating pod is not replaced")
	}
	noCrash := func() {
		t.Helper()
		sp, _ := r.record(id)
		require.Zero(t, sp.Restarts, "no restart counted")
		require.Empty(t, sp.Failures, "no crash counted")
		require.True(t, sp.NotBefore.IsZero(), "no backoff")
		require.False(t, sp.BreakerOpen)
		for _, e := range r.events(id) {
			require.NotEqual(t, "restart", e.Action, "%s", e.Text)
			if e.Kind == state.KindLifecycle && e.Action == "health" {
				require.False(t, strings.HasPrefix(e.Text, "Dead") || strings.HasPrefix(e.Text, "Diverged"), "never dead nor diverged on the way: %s", e.Text)
			}
		}
	}

	r.ok("create", id, "--wake")
	b := runPod()
	r.waitHealthy(id, 30*time.Second)

	// 1. A plain wake: woken (its wish recorded), the start is the next
	// reconcile's once the old pod is gone.
	old := asleepTerminating(b)
	res := r.run("wake", id)
	require.Equal(t, 0, res.code, "%s", res)
	require.Contains(t, res.stdout, "woken")
	require.Contains(t, res.stderr, "still terminating", "the person hears why nothing runs yet")
	waiting(old)
	rep, _ := r.reconcile()
	require.False(t, rep.did(id, "start") || rep.did(id, "restart") || rep.did(id, "stop"), "%+v", rep.Actions)
	waiting(old)
	require.NoError(t, kubelet.Finish(ctx, name))
	rep, _ = r.reconcile()
	require.True(t, rep.did(id, "start"), "a first start once the old pod is gone: %+v", rep.Actions)
	require.False(t, rep.did(id, "restart"), "%+v", rep.Actions)
	newPod(old)
	b = runPod()
	s := r.waitHealthy(id, 30*time.Second)
	require.Zero(t, s.Observed.Restarts)
	noCrash()

	// 2. wake --wait waits through the old pod's end, starts the new one
	// and succeeds once its bridge answers.
	old = asleepTerminating(b)
	type result struct {
		res cmdResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := r.runErr("wake", "--wait", "60s", id)
		done <- result{res, err}
	}()
	time.Sleep(time.Second)
	select {
	case got := <-done:
		t.Fatalf("wake --wait returned while the old pod terminates: %v %s", got.err, got.res)
	default:
	}
	require.Equal(t, old, pod().UID, "the terminating pod is not replaced")
	require.NoError(t, kubelet.Finish(ctx, name))
	newPod(old)
	b = runPod()
	var got result
	select {
	case got = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("wake --wait did not return")
	}
	require.NoError(t, got.err)
	require.Equal(t, 0, got.res.code, "%s", got.res)
	s, code := r.status(id)
	require.Equal(t, 0, code)
	require.Equal(t, "Healthy", s.Effective)
	noCrash()
	b.kill(t)
}
