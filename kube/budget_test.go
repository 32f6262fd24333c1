package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// Budgets on the Kubernetes runtime (docs/budgets.md): a spore whose turn
// took it over its daily budget is put to sleep by a healing pass once
// the turn has ended, which deletes its pod and keeps its claim and
// Secret; a prompt sent meanwhile stays queued, undelivered; the next UTC
// day a pass wakes it (a new pod on the same claim) and the prompt is
// delivered. The test kubelet runs no bridge, so the pass dials a fake
// one; its lines are stamped from 2026-01-01T00:00Z on.
func TestBudgetSleepsThePodAndTheNextDayWakesIt(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ds := statetest.Dir(t, state.Settings{Runtime: "kube", ModelGateway: state.GatewayOff}) // budgets judge the agent's report
	now := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
	bridges := reconciletest.New()
	b := bridges.BridgeOf("thrift")
	b.SetUp(true)
	pass := reconciletest.NewPass(t, ds, reconciletest.WithClock(func() time.Time { return now }), reconciletest.WithRuntime(e.rt),
		reconciletest.WithDial(func(reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) { return b, nil }))
	heal := func() *reconcile.Outcome {
		t.Helper()
		out, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
		require.NoError(t, err)
		return out
	}
	require.NoError(t, ds.Update(ctx, func(tx state.Tx) error {
		if _, err := wish.Create(ctx, tx, wish.New{ID: "thrift", Colony: "moss", Rank: state.RankSpore, Budget: state.Budget{TokensPerDay: 20}}, now); err != nil {
			return err
		}
		return wish.Wake(ctx, tx, "thrift", now)
	}))
	out := heal()
	require.True(t, out.Plans[0].Start)
	require.NoError(t, out.Plans[0].StartErr)
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-thrift"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-thrift", true))
	first, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-thrift", metav1.GetOptions{})
	require.NoError(t, err)

	// A turn of 25 tokens, ended: over its 20.
	b.Write(`{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`,
		`{"type":"result","subtype":"success","total_cost_usd":0.000025,"usage":{"input_tokens":15,"output_tokens":10}}`)
	now = now.Add(time.Minute)
	out = heal()
	require.True(t, out.Plans[0].SleepBudget, "%+v", out.Spores[0])
	require.True(t, out.Plans[0].Stop)
	require.NoError(t, out.Plans[0].StopErr)
	sp := statetest.Spore(t, ds, "thrift")
	require.Equal(t, state.Paused, sp.Desired)
	require.Equal(t, state.ByBudget, sp.DesiredBy)
	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-thrift", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, pod.DeletionTimestamp, "its pod is being deleted")
	require.NoError(t, e.kubelet.Finish(ctx, "spore-thrift"))
	for _, get := range []func() error{
		func() error {
			_, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-thrift", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-thrift", metav1.GetOptions{})
			return err
		},
	} {
		require.NoError(t, get(), "the home and the tokens are kept")
	}

	// A prompt while over budget is recorded and held, not delivered.
	_, err = outbox.Send(ctx, ds, outbox.Message{To: "thrift", From: "user:ops", Kind: state.KindPrompt, Text: "next task"}, now)
	var over *outbox.OverBudgetError
	require.ErrorAs(t, err, &over)
	out = heal()
	require.False(t, out.Plans[0].Start, "still over budget today: not woken")
	require.Equal(t, reconcile.PodAbsent, out.Spores[0].Observed.Pod)
	require.Equal(t, "budget", out.Spores[0].SleptBy)
	require.Empty(t, b.Prompts(), "nothing delivered")
	queued := statetest.Read(t, ds, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "thrift") })
	require.Len(t, queued, 1, "the prompt is kept")

	// The next UTC day: within budget again, with something queued, it is
	// woken: a new pod on the same claim.
	now = time.Date(2026, 1, 2, 0, 5, 0, 0, time.UTC)
	out = heal()
	require.True(t, out.Plans[0].WakeBudget, "%+v", out.Spores[0])
	require.True(t, out.Plans[0].Start)
	require.NoError(t, out.Plans[0].StartErr)
	pod, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-thrift", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, first.UID, pod.UID, "a new pod")
	require.Equal(t, "spore-thrift", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "on the same home")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-thrift"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-thrift", true))
	now = now.Add(time.Minute)
	heal()
	prompts := b.Prompts()
	require.Len(t, prompts, 1, "the held prompt, delivered once")
	require.Equal(t, "next task", prompts[0].Text)
	require.Equal(t, queued[0].ID, prompts[0].ID)
	sp = statetest.Spore(t, ds, "thrift")
	require.Equal(t, state.Running, sp.Desired)
	require.Equal(t, state.ByPerson, sp.DesiredBy)
}
