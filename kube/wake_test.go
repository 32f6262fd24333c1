package kube_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// `sleep`, then `wake` while the old pod is still terminating (its node
// has not confirmed yet): the spore is waiting for the old pod to go —
// not Dead, not Diverged — no pass replaces or counts anything while it
// terminates, and once it is gone the next healing pass creates the new
// pod as a first start: no crash counted, no backoff, the breaker
// untouched. (It went Diverged, then "Dead: nothing running", and the
// start after it counted a crash.)
func TestWakeWhileTheOldPodTerminates(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ds := statetest.Dir(t, state.Settings{Runtime: "kube"})
	pass := reconciletest.NewPass(t, ds, reconciletest.WithRuntime(e.rt), reconciletest.RealClock())
	const id = "nap"
	pod := "spore-" + id
	run := func(opt reconcile.Options) *reconcile.SporePlan {
		t.Helper()
		opt.IDs = []string{id}
		out, err := pass.Run(ctx, opt)
		require.NoError(t, err)
		require.Len(t, out.Plans, 1)
		return out.Plans[0]
	}
	record := func() state.Spore {
		t.Helper()
		var sp state.Spore
		require.NoError(t, ds.View(ctx, func(tx state.Tx) (err error) { sp, err = tx.Spore(ctx, id); return err }))
		return sp
	}
	// What sleep and wake do: the wish recorded (cmd/cli setDesired),
	// then a healing pass, forced for a wake.
	wish := func(d state.Desired) *reconcile.SporePlan {
		t.Helper()
		require.NoError(t, ds.Update(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			sp.Desired, sp.Updated = d, time.Now().UTC()
			sp.Generation++
			_, err = storetest.Put(ctx, tx, sp)
			return err
		}))
		opt := reconcile.Options{Heal: true}
		if d == state.Running {
			opt.Force = []string{id}
		}
		return run(opt)
	}

	require.NoError(t, ds.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, spore(id)) }))
	p := run(reconcile.Options{Heal: true, Force: []string{id}})
	require.True(t, p.Start)
	require.NoError(t, p.StartErr)
	require.NoError(t, e.kubelet.Schedule(ctx, pod))
	require.NoError(t, e.kubelet.Run(ctx, pod, false))
	old, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	require.NoError(t, err)

	p = wish(state.Paused)
	require.True(t, p.Stop)
	require.NoError(t, p.StopErr)
	got, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, got.DeletionTimestamp, "bound: terminating until its node confirms")

	p = wish(state.Running)
	require.False(t, p.Start || p.Stop, "the old pod is waited on: %+v", p)
	require.Equal(t, policy.Suspect, p.Verdict.Effective)
	require.Equal(t, reconcile.ReasonOldPodTerminating, p.Verdict.Code)
	for _, opt := range []reconcile.Options{{}, {Heal: true}} { // status, reconcile
		p = run(opt)
		require.False(t, p.Start || p.Stop, "heal %v: %+v", opt.Heal, p)
		require.Equal(t, reconcile.ReasonOldPodTerminating, p.Verdict.Code)
	}
	sp := record()
	require.Equal(t, "Suspect", string(sp.Health))
	require.Equal(t, string(reconcile.ReasonOldPodTerminating), sp.HealthReason)
	got, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, old.UID, got.UID, "nothing replaced the terminating pod")

	// The node confirms: the old pod is gone.
	require.NoError(t, e.kubelet.Finish(ctx, pod))
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	p = run(reconcile.Options{Heal: true})
	require.True(t, p.Start, "the new pod once the old one is gone: %+v", p)
	require.False(t, p.Crash, "a wake is not a crash")
	require.NoError(t, p.StartErr)
	fresh, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, old.UID, fresh.UID, "a new pod")
	require.Nil(t, fresh.DeletionTimestamp)

	sp = record()
	require.Zero(t, sp.Restarts, "no restart counted")
	require.Empty(t, sp.Failures, "no crash counted")
	require.True(t, sp.NotBefore.IsZero(), "no backoff")
	require.False(t, sp.BreakerOpen)
	var evs []state.Event
	require.NoError(t, ds.View(ctx, func(tx state.Tx) (err error) { evs, err = tx.Events(ctx, id, 0, 0); return err }))
	var lifecycle []string
	for _, ev := range evs {
		if ev.Kind == state.KindLifecycle {
			lifecycle = append(lifecycle, ev.Action+": "+ev.Text)
		}
		require.NotEqual(t, "restart", ev.Action, "%s", ev.Text)
		require.NotContains(t, ev.Text, "Dead", "never dead on the way: %s", ev.Text)
		require.NotContains(t, ev.Text, "Diverged", "%s", ev.Text)
	}
	t.Logf("events: %q", lifecycle)

	// The new pod runs: nothing more to do, and still no crash.
	require.NoError(t, e.kubelet.Schedule(ctx, pod))
	require.NoError(t, e.kubelet.Run(ctx, pod, false))
	p = run(reconcile.Options{Heal: true})
	require.False(t, p.Start || p.Stop || p.Crash, "%+v", p)
	require.Zero(t, record().Restarts)
}
