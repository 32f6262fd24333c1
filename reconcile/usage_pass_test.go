package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// usageEnv is a colony over st, the clock on the fake bridge's UTC day:
// the [arch] and spore a awake (started by a first pass), a with a
// daily budget of 100,000 tokens, the gateway on (the default).
type usageEnv struct {
	t    *testing.T
	st   state.Store
	rt   *reconciletest.Runtime
	now  time.Time
	pass *reconcile.Pass
}

func newUsageEnv(t *testing.T, st state.Store) *usageEnv {
	e := &usageEnv{t: t, st: st, rt: reconciletest.New(), now: fakeLineHour.Add(10 * time.Hour)}
	e.pass = reconciletest.NewPass(t, st, reconciletest.WithFake(e.rt), reconciletest.WithClock(func() time.Time { return e.now }))
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, n := range []wish.New{
			{ID: "arch", Colony: "lab", Rank: state.RankArch},
			{ID: "a", Colony: "lab", Rank: state.RankSpore, Budget: state.Budget{TokensPerDay: 100_000}},
		} {
			if _, err := wish.Create(ctx, tx, n, e.now); err != nil {
				return err
			}
			if err := wish.Wake(ctx, tx, n.ID, e.now); err != nil {
				return err
			}
		}
		return nil
	}))
	e.heal()
	require.Equal(t, 2, e.rt.Calls("Start"))
	return e
}

func (e *usageEnv) heal() *reconcile.Outcome {
	e.t.Helper()
	out, err := e.pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
	require.NoError(e.t, err)
	return out
}

// count counts a model call of a as the gateway does, and checks the
// store kept it.
func (e *usageEnv) count(id string, u state.Usage) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error {
		_, err := state.CountModelCall(ctx, tx, "a", id, u, e.now)
		return err
	}))
	keptByTheStore(e.t, statetest.Spore(e.t, e.st, "a"))
}

// keptByTheStore fails unless sp's record holds the gateway's count.
func keptByTheStore(t *testing.T, sp state.Spore) {
	t.Helper()
	if len(sp.ModelUsage) == 0 {
		t.Fatal("the store did not keep the gateway's count")
	}
}

// usageSummonses are the [arch]'s summonses about usage.
func (e *usageEnv) usageSummonses() []state.Event {
	var out []state.Event
	for _, ev := range statetest.Events(e.t, e.st, "arch") {
		if ev.Kind == state.KindMessage && ev.From == reconcile.SummonsFrom && strings.Contains(ev.Text, "Usage:") {
			out = append(out, ev)
		}
	}
	return out
}

func resultLine(in, out int64) string {
	return fmt.Sprintf(`{"type":"result","subtype":"success","total_cost_usd":0.01,"usage":{"input_tokens":%d,"output_tokens":%d}}`, in, out)
}

// TestPassJudgesTheGatewaysCount: with the gateway on, a spore whose
// bridge reports no usage but whose model calls the gateway counted to
// its budget is put to sleep when its turn ends; status shows the count
// as its spend and the report beside it; and the [arch] is summoned,
// once, about the two apart.
func TestPassJudgesTheGatewaysCount(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newUsageEnv(t, open(t))
			e.count("msg_1", state.Usage{InputTokens: 60_000, CacheReadTokens: 900_000, OutputTokens: 20_000, CostMicros: 300_000})
			e.count("msg_2", state.Usage{InputTokens: 15_000, CacheCreationTokens: 5_000, OutputTokens: 1_000})
			e.rt.BridgeOf("a").Write(passText, resultLine(0, 0))

			out := e.heal()
			sp := statetest.Spore(t, e.st, "a")
			require.Equal(t, state.Paused, sp.Desired, "over its budget by the gateway's count")
			require.Equal(t, state.ByBudget, sp.DesiredBy)
			h := health(out, "a")
			require.Equal(t, "101000/100000 tokens today", h.OverBudget, "cache reads are not counted")
			require.Equal(t, &state.Spend{Tokens: 101_000, CostMicros: 300_000}, h.Spend)
			require.Equal(t, &state.Spend{Tokens: 0, CostMicros: 10_000}, h.ReportedSpend, "the agent's own account, beside it")

			s := e.usageSummonses()
			require.Len(t, s, 1)
			require.Contains(t, s[0].Text, "spore a's agent reported 0 tokens today")
			require.Contains(t, s[0].Text, "the model gateway counted 101000 tokens")
			keys := map[string]bool{}
			for _, in := range statetest.Spore(t, e.st, "arch").Incidents {
				keys[in.Key] = true
			}
			require.True(t, keys[reconcile.UsageKey("a", fakeLineHour)], "its key kept: %v", keys)

			e.now = e.now.Add(time.Minute)
			e.heal()
			require.Len(t, e.usageSummonses(), 1, "once a day")
		})
	}
}

// TestPassIgnoresAForgedReport: a spore whose bridge reports 30,000,000
// tokens (in lines each within what a turn can claim) while the gateway
// counted little is within its budget, given what is sent to it, and
// the [arch] is summoned, naming both figures, once that day.
func TestPassIgnoresAForgedReport(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newUsageEnv(t, open(t))
			e.count("msg_1", state.Usage{InputTokens: 1_000, OutputTokens: 200})
			e.rt.BridgeOf("a").Write(passText, resultLine(10_000_000, 5_000_000), resultLine(10_000_000, 5_000_000))

			out := e.heal()
			require.Equal(t, state.Running, statetest.Spore(t, e.st, "a").Desired, "not over budget")
			h := health(out, "a")
			require.Empty(t, h.OverBudget)
			require.Equal(t, &state.Spend{Tokens: 1_200}, h.Spend)
			require.Equal(t, int64(30_000_000), h.ReportedSpend.Tokens)

			s := e.usageSummonses()
			require.Len(t, s, 1)
			require.Contains(t, s[0].Text, "reported 30000000 tokens today (2026-01-01 UTC)")
			require.Contains(t, s[0].Text, "counted 1200 tokens")

			_, err := outbox.Send(context.Background(), e.st, outbox.Message{To: "a", From: "user:ann", Text: "go on"}, e.now)
			require.NoError(t, err, "a forged report holds nothing back")
			e.rt.BridgeOf("a").Write(resultLine(10_000_000, 0))
			e.now = e.now.Add(time.Minute)
			e.heal()
			require.Len(t, e.usageSummonses(), 1, "once a day, however far apart")
		})
	}
}

// TestPassComparesOnlyAnEndedTurnBeyondTheTolerance: an honest report a
// little short of the count is no incident, nor is any difference while
// the turn runs (the gateway counts each call as it is answered, the
// report comes at the turn's end); nor with the gateway off.
func TestPassComparesOnlyAnEndedTurnBeyondTheTolerance(t *testing.T) {
	t.Run("within the tolerance", func(t *testing.T) {
		e := newUsageEnv(t, statetest.Dir(t, state.Settings{Runtime: "local"}))
		e.count("msg_1", state.Usage{InputTokens: 50_000, OutputTokens: 10_000})
		e.count("msg_haiku", state.Usage{InputTokens: 12_000, OutputTokens: 100}) // a call the result leaves out
		e.rt.BridgeOf("a").Write(passText, resultLine(50_000, 10_000))
		e.heal()
		require.Empty(t, e.usageSummonses())
	})
	t.Run("mid-turn", func(t *testing.T) {
		e := newUsageEnv(t, statetest.Dir(t, state.Settings{Runtime: "local"}))
		e.count("msg_1", state.Usage{InputTokens: 90_000})
		e.rt.BridgeOf("a").Write(passText)
		e.rt.BridgeOf("a").SetState(bridge.StateWorking)
		e.heal()
		require.Empty(t, e.usageSummonses(), "the report comes when the turn ends")
		e.rt.BridgeOf("a").SetState(bridge.StateIdle)
		e.heal()
		require.Len(t, e.usageSummonses(), 1, "and then it is compared")
	})
	t.Run("a pass over named spores without the [arch]", func(t *testing.T) {
		e := newUsageEnv(t, statetest.Dir(t, state.Settings{Runtime: "local"}))
		e.count("msg_1", state.Usage{InputTokens: 90_000})
		e.rt.BridgeOf("a").Write(passText, resultLine(0, 0))
		_, err := e.pass.Run(context.Background(), reconcile.Options{IDs: []string{"a"}, Heal: true, Deliver: true})
		require.NoError(t, err)
		require.Empty(t, e.usageSummonses(), "its snapshot cannot tell whether today's was raised")
		e.heal()
		require.Len(t, e.usageSummonses(), 1, "the next pass over the fleet raises it")
	})
	t.Run("the [arch] itself", func(t *testing.T) {
		e := newUsageEnv(t, statetest.Dir(t, state.Settings{Runtime: "local"}))
		ctx := context.Background()
		require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
			_, err := state.CountModelCall(ctx, tx, "arch", "msg_1", state.Usage{InputTokens: 90_000}, e.now)
			return err
		}))
		e.rt.BridgeOf("arch").Write(passText, resultLine(0, 0))
		e.heal()
		require.Empty(t, e.usageSummonses(), "not summoned about itself")
	})
	t.Run("direct mode", func(t *testing.T) {
		st := statetest.Dir(t, state.Settings{Runtime: "local"})
		direct(t, st)
		e := newUsageEnv(t, st)
		e.count("msg_1", state.Usage{InputTokens: 90_000})
		e.rt.BridgeOf("a").Write(passText, resultLine(0, 0))
		out := e.heal()
		require.Empty(t, e.usageSummonses(), "nothing counts against the report")
		require.Nil(t, health(out, "a").ReportedSpend, "the report is the spend")
	})
}
