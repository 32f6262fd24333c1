package kube_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// Idle sleep on the Kubernetes runtime (docs/sleep.md): a spore whose
// bridge has been idle past its sleep-after is put to sleep by a healing
// pass, which deletes its pod and keeps its claim and Secret. The test
// kubelet runs no bridge, so the pass dials a fake one that says idle.
func TestIdleSleepDeletesThePod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ds := statetest.Dir(t, state.Settings{Runtime: "kube"})
	now := time.Now().UTC()
	bridges := reconciletest.New()
	pass := reconciletest.NewPass(t, ds, reconciletest.WithClock(func() time.Time { return now }), reconciletest.WithRuntime(e.rt),
		reconciletest.WithDial(func(reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
			b := bridges.BridgeOf("nap")
			b.SetUp(true)
			return b, nil
		}))
	require.NoError(t, ds.Update(ctx, func(tx state.Tx) error {
		if _, err := wish.Create(ctx, tx, wish.New{ID: "nap", Colony: "moss", Rank: state.RankSpore, SleepAfter: 30 * time.Minute}, now); err != nil {
			return err
		}
		return wish.Wake(ctx, tx, "nap", now)
	}))
	out, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	require.True(t, out.Plans[0].Start)
	require.NoError(t, out.Plans[0].StartErr)
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-nap"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-nap", true))

	now = now.Add(10 * time.Minute)
	out, err = pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	require.Equal(t, policy.Healthy, out.Spores[0].Effective, "%+v", out.Spores[0])
	require.False(t, out.Plans[0].SleepIdle, "idle 10m of 30m")

	now = now.Add(25 * time.Minute)
	out, err = pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	require.True(t, out.Plans[0].SleepIdle)
	require.True(t, out.Plans[0].Stop)
	require.NoError(t, out.Plans[0].StopErr)
	sp := statetest.Spore(t, ds, "nap")
	require.Equal(t, state.Paused, sp.Desired)
	require.Equal(t, state.ByIdle, sp.DesiredBy)

	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-nap", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, pod.DeletionTimestamp, "its pod is being deleted")
	require.NoError(t, e.kubelet.Finish(ctx, "spore-nap"))
	_, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-nap", metav1.GetOptions{})
	require.NoError(t, err, "the home is kept")

	out, err = pass.Run(ctx, reconcile.Options{IDs: []string{"nap"}})
	require.NoError(t, err)
	require.Equal(t, policy.Paused, out.Spores[0].Effective)
	require.Equal(t, reconcile.PodAbsent, out.Spores[0].Observed.Pod)
	require.Equal(t, "idle", out.Spores[0].SleptBy)
	require.Equal(t, "asleep: idle for 30m0s", out.Spores[0].Reason)
}
