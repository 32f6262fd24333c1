package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
)

// starting makes id's pod Running, not Ready, its bridge started a
// moment ago (what the kube runtime reports for a woken pod before the
// kubelet's readiness probe ran), keeping what else it says.
func (e *env) starting(id string, po reconcile.PodObservation) {
	po.ID, po.State, po.Ready, po.Starting = id, reconcile.PodRunning, false, true
	e.rt.Set(po)
}

// A woken spore is up when its bridge answers, not when the runtime says
// it is ready: the pass asks a started, not-ready pod's bridge, and one
// that answers is Up for the pass — judged Healthy, its lines ingested,
// its queued prompt delivered — exactly as a ready one.
func TestPassAsksAStartingBridge(t *testing.T) {
	e := newEnv(t, "a")
	e.awake("a")
	e.starting("a", reconcile.PodObservation{})
	e.rt.BridgeOf("a").Write(`{"type":"assistant","n":1}`)
	_, err := outbox.Send(context.Background(), e.st, outbox.Message{To: "a", From: "user:ann", Text: "hello"}, e.now)
	require.NoError(t, err)

	out := e.heal()
	a := health(out, "a")
	require.Equal(t, reconcile.BridgeUp, a.Observed.Bridge)
	require.Equal(t, reconcile.PodRunning, a.Observed.Pod)
	require.Equal(t, policy.Healthy, a.Effective)
	require.Empty(t, a.Observed.Reason)
	require.Equal(t, []uint64{1}, agentSeqs(e.events("a")), "its lines are ingested")
	require.Len(t, e.rt.BridgeOf("a").Prompts(), 1, "its queued prompt is delivered")

	// Observe, which the stage benchmark polls, says Up too, over HTTP
	// as a real bridge answers; and not yet listening (the fake's 503,
	// as the API server's pod proxy answers for a pod that refuses the
	// connection), coming up.
	h := reconciletest.NewHTTP(e.rt)
	defer h.Close()
	obs, _, err := reconcile.Observe(context.Background(), h.Runtime(), []string{"a"})
	require.NoError(t, err)
	require.Equal(t, reconcile.BridgeUp, obs["a"].Bridge)
	e.rt.BridgeOf("a").SetUp(false)
	obs, _, err = reconcile.Observe(context.Background(), h.Runtime(), []string{"a"})
	require.NoError(t, err)
	require.Equal(t, reconcile.BridgeUnknown, obs["a"].Bridge)
	require.Equal(t, reconcile.ReasonBridgeStarting, obs["a"].Reason)
}

// A not-ready bridge that does not answer yet is coming up: Unknown with
// BridgeStarting, never Down, and nothing is restarted on its account.
// What else is known of it keeps its weight: a restart after a crash
// shows the crash, a bridge that answered out of contract is a breach,
// and one whose pod is not Starting (it ran for long and its readiness
// failed) is Down as before.
func TestPassReadsAStartingBridgeThatDoesNotAnswerAsComingUp(t *testing.T) {
	cases := []struct {
		name   string
		pod    reconcile.PodObservation
		bridge func(b bridgeSetter)
		obs    reconcile.BridgeState
		code   reconcile.Reason
	}{
		{"not listening yet", reconcile.PodObservation{}, func(b bridgeSetter) { b.SetUp(false) },
			reconcile.BridgeUnknown, reconcile.ReasonBridgeStarting},
		{"restarted after a crash, not listening yet", reconcile.PodObservation{Restarts: 1, Reason: "OOMKilled"}, func(b bridgeSetter) { b.SetUp(false) },
			reconcile.BridgeUnknown, reconcile.ReasonOOMKilled},
		{"answered out of contract", reconcile.PodObservation{}, func(b bridgeSetter) { b.SetState(bridge.State("bogus")) },
			reconcile.BridgeDown, reconcile.ReasonContractBreach},
		{"the way to it refused the call", reconcile.PodObservation{}, func(b bridgeSetter) {
			b.SetStatusErr(&bridge.APIError{Status: 403})
		}, reconcile.BridgeDown, reconcile.ReasonBridgeRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "a")
			e.awake("a")
			e.starting("a", c.pod)
			c.bridge(e.rt.BridgeOf("a"))
			starts := e.rt.Calls("Start")
			out := e.heal()
			a := health(out, "a")
			require.Equal(t, c.obs, a.Observed.Bridge)
			require.Equal(t, policy.Suspect, a.Effective)
			require.Equal(t, c.code, a.Code)
			require.Equal(t, c.code, a.Observed.Reason, "what status shows")
			require.Equal(t, starts, e.rt.Calls("Start"), "nothing restarted")
		})
	}

	t.Run("not starting: running for long, readiness failing", func(t *testing.T) {
		// Not asked, as before: even a bridge that would answer (the
		// fake's does) is Down.
		e := newEnv(t, "a")
		e.awake("a")
		e.rt.Set(reconcile.PodObservation{ID: "a", State: reconcile.PodRunning})
		out := e.heal()
		a := health(out, "a")
		require.Equal(t, reconcile.BridgeDown, a.Observed.Bridge)
		require.Equal(t, reconcile.ReasonBridgeNotAnswer, a.Code)
		require.Empty(t, e.rt.BridgeOf("a").Prompts())
	})
	t.Run("exited while starting", func(t *testing.T) {
		// A runtime that says both is believed on the exit: nothing to ask.
		e := newEnv(t, "a")
		e.awake("a")
		e.starting("a", reconcile.PodObservation{Exited: true, Reason: "Error"})
		a := health(e.heal(), "a")
		require.Equal(t, reconcile.BridgeDown, a.Observed.Bridge)
		require.Equal(t, reconcile.Reason("Error"), a.Code)
	})
}

// A starting bridge that hangs costs the pass its short ask, not the
// whole observation deadline: a bridge that started and never answers
// would otherwise hold every pass of its first minute (and `wake --wait`'s
// every poll) to the deadline.
func TestPassBoundsTheAskOfAStartingBridge(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.awake("a", "b")
	e.starting("a", reconcile.PodObservation{})
	e.rt.BridgeOf("a").SetHang(true)
	ps := e.pass()
	ps.ObserveDeadline = 10 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := ps.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "the pass waited for the observation deadline")
	a := health(out, "a")
	require.Equal(t, reconcile.BridgeUnknown, a.Observed.Bridge)
	require.Equal(t, reconcile.ReasonBridgeStarting, a.Code)
	require.True(t, errors.Is(a.Observed.BridgeErr, context.DeadlineExceeded), "%v", a.Observed.BridgeErr)
	require.Equal(t, policy.Healthy, health(out, "b").Effective, "a ready bridge is asked as ever")
}

// bridgeSetter is what the cases above change of a fake bridge.
type bridgeSetter interface {
	SetUp(bool)
	SetState(bridge.State)
	SetStatusErr(error)
}
