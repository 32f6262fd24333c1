package kube_test

import (
	"context"
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

// A spore is awake exactly when its pod exists: `sleep` (and `stop`), as
// the command runs it (the wish recorded, then a healing pass over the
// spore), removes the pod whatever became of it, keeps the claim and the
// Secret, and the spore is then Paused with no pod.
func TestSleepRemovesThePodWhateverItsPhase(t *testing.T) {
	e := newEnv(t)
	ds := statetest.Dir(t, state.Settings{Runtime: "kube"})
	pass := reconciletest.NewPass(t, ds, reconciletest.WithRuntime(e.rt), reconciletest.RealClock())

	cases := []struct {
		id      string
		desired state.Desired
		// become brings the started pod to the phase under test.
		become func(ctx context.Context, pod string) error
		// bound: the pod is not terminal, so the server keeps it
		// Terminating until the node confirms.
		bound bool
	}{
		{"failed", state.Paused, func(ctx context.Context, pod string) error { return e.kubelet.Fail(ctx, pod, "Error") }, false},
		{"evicted", state.Paused, func(ctx context.Context, pod string) error { return e.kubelet.Evict(ctx, pod) }, false},
		{"completed", state.Paused, func(ctx context.Context, pod string) error { return e.kubelet.Succeed(ctx, pod) }, false},
		{"stopped-failed", state.Stopped, func(ctx context.Context, pod string) error { return e.kubelet.Fail(ctx, pod, "OOMKilled") }, false},
		{"node-lost", state.Paused, func(ctx context.Context, pod string) error { return e.kubelet.LoseNode(ctx, pod) }, true},
		{"running", state.Paused, func(context.Context, string) error { return nil }, true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			ctx := t.Context()
			pod := "spore-" + c.id
			require.NoError(t, ds.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, spore(c.id)) }))
			out, err := pass.Run(ctx, reconcile.Options{IDs: []string{c.id}, Heal: true, Force: []string{c.id}})
			require.NoError(t, err)
			require.True(t, out.Plans[0].Start)
			require.NoError(t, out.Plans[0].StartErr)
			require.NoError(t, e.kubelet.Schedule(ctx, pod))
			// Not ready: the pass does not try to reach a bridge nothing runs.
			require.NoError(t, e.kubelet.Run(ctx, pod, false))
			require.NoError(t, c.become(ctx, pod))
			before, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err)
			claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err)

			// What `sleep` / `stop` does (cmd/cli setDesired, then the pass).
			require.NoError(t, ds.Update(ctx, func(tx state.Tx) error {
				sp, err := tx.Spore(ctx, c.id)
				if err != nil {
					return err
				}
				sp.Desired, sp.Updated = c.desired, time.Now().UTC()
				sp.Generation++
				_, err = storetest.Put(ctx, tx, sp)
				return err
			}))
			out, err = pass.Run(ctx, reconcile.Options{IDs: []string{c.id}, Heal: true})
			require.NoError(t, err)
			require.True(t, out.Plans[0].Stop, "a %s pod of a spore put to sleep must be removed", before.Status.Phase)
			require.NoError(t, out.Plans[0].StopErr)

			got, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
			if c.bound {
				require.NoError(t, err)
				require.NotNil(t, got.DeletionTimestamp, "deletion requested")
				require.NoError(t, e.kubelet.Finish(ctx, pod))
			} else {
				require.True(t, apierrors.IsNotFound(err), "a terminal pod goes at once: %v", err)
			}
			after, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err, "sleep keeps the home")
			require.Equal(t, claim.UID, after.UID)
			_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err, "sleep keeps the secret")

			// status: asleep as wished, no pod.
			out, err = pass.Run(ctx, reconcile.Options{IDs: []string{c.id}})
			require.NoError(t, err)
			want := policy.Paused
			if c.desired == state.Stopped {
				want = policy.Stopped
			}
			require.Equal(t, want, out.Spores[0].Effective)
			require.Equal(t, reconcile.PodAbsent, out.Spores[0].Observed.Pod)
			var sp state.Spore
			require.NoError(t, ds.View(ctx, func(tx state.Tx) (err error) { sp, err = tx.Spore(ctx, c.id); return err }))
			require.Equal(t, want, sp.Health, "the recorded health")
		})
	}
}
