package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// t0 is the fixture's now: the fake bridges stamp their lines
// 2026-01-01T00:00:0Ns, so what this pass ingests counts today.
var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// fleetFixture is a store and a fake runtime:
//   - colony a: a1, a2, a3 awake and idle (Healthy); a4 awake, its bridge
//     numbering with a gap after its first line (Suspect, IngestGap), 3
//     lines ahead of the store after the pass;
//   - colony b: b1 asleep (Paused) with one message waiting 90 s; bm,
//     the colony's mycologist, desired Running with nothing running
//     (Dead);
//   - a runtime object "ghost" that no spore owns (an orphan).
//
// a1 holds today's activity (and yesterday's, which does not count);
// a2 a little; a1's bridge has a result line the pass ingests.
type fleetFixture struct {
	st   state.Store
	rt   *reconciletest.Runtime
	pass *reconcile.Pass
}

func newFleet(t testing.TB) *fleetFixture {
	t.Helper()
	ctx := context.Background()
	// The direct mode: the spend is the agents' reports (the gateway's
	// count is TestFleetSpendIsTheGatewaysCount's).
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec(), ModelGateway: state.GatewayOff})
	rt := reconciletest.New()
	spore := func(id, colony string, rank state.Rank, d state.Desired) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony, Rank: rank, Desired: d, Created: t0.Add(-48 * time.Hour), Updated: t0.Add(-48 * time.Hour)}}
	}
	a1 := spore("a1", "a", state.RankSpore, state.Running)
	a1.Activity = []state.HourActivity{
		{Hour: t0.Add(-11 * time.Hour), InputTokens: 9999, OutputTokens: 9999, CostMicros: 9_999_999}, // yesterday
		{Hour: t0.Add(-time.Hour), Turns: 2, InputTokens: 1000, OutputTokens: 200, CostMicros: 1_500_000},
	}
	a2 := spore("a2", "a", state.RankSpore, state.Running)
	a2.Activity = []state.HourActivity{{Hour: t0.Add(-2 * time.Hour), InputTokens: 500, OutputTokens: 100, CostMicros: 250_000}}
	statetest.Create(t, st, a1, a2,
		spore("a3", "a", state.RankSpore, state.Running), spore("a4", "a", state.RankSpore, state.Running),
		spore("b1", "b", state.RankSpore, state.Paused), spore("bm", "b", state.RankColony, state.Running))
	err := st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "p-waiting", Spore: "b1", From: "user:op", Text: "hello", At: t0.Add(-90 * time.Second)})
		return err
	})
	require.NoError(t, err)
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		require.NoError(t, rt.Start(ctx, state.Spore{Wish: state.Wish{ID: id}}, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	}
	rt.BridgeOf("a1").Write(`{"type":"result","subtype":"success","total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":7}}`)
	b := rt.BridgeOf("a4")
	b.Write(`"one"`)
	b.Skip()
	b.Write(`"three"`, `"four"`, `"five"`)
	rt.Set(reconcile.PodObservation{ID: "ghost", State: reconcile.PodRunning})
	pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.At(t0))
	return &fleetFixture{st: st, rt: rt, pass: pass}
}

// text is c's families in the text format.
func text(t testing.TB, cs ...prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	return gatherText(t, reg)
}

func gatherText(t testing.TB, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return b.String()
}

// TestFleetFamilies: a read-only pass's outcome as the fleet's families,
// parsed back with expfmt: spores by colony, rank and effective state
// (zeros for the states nobody is in), the outbox, ingest lag after the
// pass's ingest, tokens and cost today from the stored activity and what
// the pass ingested, the orphan; and promtool finds nothing wrong.
func TestFleetFamilies(t *testing.T) {
	f := newFleet(t)
	out, err := f.pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	txt := text(t, metrics.Fleet(out, t0))
	fams := metricstest.Parse(t, txt)

	spores := func(colony, rank, eff string) float64 {
		return fams.Value(t, "sporectl_spores", "colony", colony, "rank", rank, "effective", eff)
	}
	require.Equal(t, 3.0, spores("a", "spore", "Healthy"), txt)
	require.Equal(t, 1.0, spores("a", "spore", "Suspect"))
	require.Equal(t, 0.0, spores("a", "spore", "Dead"))
	require.Equal(t, 1.0, spores("b", "spore", "Paused"))
	require.Equal(t, 0.0, spores("b", "spore", "Healthy"))
	require.Equal(t, 1.0, spores("b", "colony", "Dead"))
	// Colony a has one rank, b two: 8 states each.
	require.Equal(t, 3*len(policy.Derived), fams.Series("sporectl_spores"))

	require.Equal(t, 0.0, fams.Value(t, "sporectl_outbox_messages", "colony", "a"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_outbox_messages", "colony", "b"))
	require.Equal(t, 90.0, fams.Value(t, "sporectl_outbox_oldest_message_age_seconds", "colony", "b"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_outbox_oldest_message_age_seconds", "colony", "a"))
	// No budget anywhere: b1's message waits, held back by none.
	require.Equal(t, 0.0, fams.Value(t, "sporectl_outbox_held_messages", "colony", "b"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_spores_over_budget", "colony", "a"))

	// a4's store holds its line 1; its bridge ends at 5.
	require.Equal(t, 4.0, fams.Value(t, "sporectl_ingest_lag_lines", "colony", "a"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_ingest_lagging_spores", "colony", "a"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_ingest_lag_lines", "colony", "b"))

	// a1: 1000 stored today + 10+5 ingested; a2: 500. Yesterday's 9999
	// are not today's.
	require.Equal(t, 1515.0, fams.Value(t, "sporectl_tokens_today", "colony", "a", "kind", "input"))
	require.Equal(t, 307.0, fams.Value(t, "sporectl_tokens_today", "colony", "a", "kind", "output"))
	require.InDelta(t, 2.0, fams.Value(t, "sporectl_cost_today_dollars", "colony", "a"), 1e-9)
	require.Equal(t, 0.0, fams.Value(t, "sporectl_tokens_today", "colony", "b", "kind", "input"))

	require.Equal(t, 1.0, fams.Value(t, "sporectl_runtime_observed"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_orphans"))

	// What the figures were read from is what the store says now: the
	// pass committed a1's line, so the stored activity holds its tokens.
	a1 := statetest.Spore(t, f.st, "a1")
	var in int64
	for _, h := range a1.Activity {
		if !h.Hour.Before(t0.Truncate(24 * time.Hour)) {
			in += h.InputTokens
		}
	}
	require.Equal(t, int64(1015), in)

	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, txt) })
}

// TestFleetUnobserved: a runtime that cannot be observed is
// sporectl_runtime_observed 0, every spore Suspect.
func TestFleetUnobserved(t *testing.T) {
	f := newFleet(t)
	f.rt.ObserveErr = context.DeadlineExceeded
	out, err := f.pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	fams := metricstest.Parse(t, text(t, metrics.Fleet(out, t0)))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_runtime_observed"))
	require.Equal(t, 4.0, fams.Value(t, "sporectl_spores", "colony", "a", "rank", "spore", "effective", "Suspect"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_ingest_lagging_spores", "colony", "a"))
}

// TestFleetBudgets: sporectl_outbox_held_messages counts the queued
// entries a budget holds back, by the pass's own judgment of who reached
// one (its own or its colony's): not those an operator marked
// over-budget, nor any of a spore within its budget, of one with none, or
// of the [arch]; sporectl_spores_over_budget counts who reached one.
// Every colony has both series, zeros included, and after a pass that
// delivers, the marked entry is gone while the held ones stay.
//
//   - colony own: o1 awake, 25 tokens today of its own 20 (over), three
//     entries queued of which one marked over-budget; o2 25 of 1000
//     (within), one entry; o3 no budget, one entry;
//   - colony lab, 100 tokens a day together: l1 60 and l2 30 spent, arch
//     (the [arch], never held back) 10, so the colony is at its budget;
//     l1 one entry, l2 one marked over-budget, arch one;
//   - colony free: f1, no budget, nothing queued.
func TestFleetBudgets(t *testing.T) {
	ctx := context.Background()
	settings := state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec(), ModelGateway: state.GatewayOff}.
		WithColony("lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 100}})
	st := statetest.Dir(t, settings)
	rt := reconciletest.New()
	spore := func(id, colony string, rank state.Rank, d state.Desired, budget, spent int64) state.Spore {
		sp := state.Spore{Wish: state.Wish{ID: id, Colony: colony, Rank: rank, Desired: d, Budget: state.Budget{TokensPerDay: budget},
			Created: t0.Add(-48 * time.Hour), Updated: t0.Add(-48 * time.Hour)}}
		if spent > 0 {
			sp.Activity = []state.HourActivity{{Hour: t0.Add(-time.Hour), Turns: 1, InputTokens: spent - 5, OutputTokens: 5}}
		}
		return sp
	}
	statetest.Create(t, st,
		spore("o1", "own", state.RankSpore, state.Running, 20, 25),
		spore("o2", "own", state.RankSpore, state.Paused, 1000, 25),
		spore("o3", "own", state.RankSpore, state.Paused, 0, 25),
		spore("l1", "lab", state.RankSpore, state.Paused, 0, 60),
		spore("l2", "lab", state.RankSpore, state.Paused, 0, 30),
		spore("arch", "lab", state.RankArch, state.Paused, 0, 10),
		spore("f1", "free", state.RankSpore, state.Paused, 0, 0))
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for i, e := range []struct {
			to     string
			marked bool
		}{{"o1", false}, {"o1", true}, {"o1", false}, {"o2", false}, {"o3", false}, {"l1", false}, {"l2", true}, {"arch", false}} {
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: fmt.Sprintf("p-%d", i), Spore: e.to, From: "user:op", Text: "hello",
				At: t0.Add(-time.Minute), OverBudget: e.marked})
			if err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, rt.Start(ctx, state.Spore{Wish: state.Wish{ID: "o1"}}, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.At(t0))
	families := func(opt reconcile.Options) (metricstest.Families, string) {
		t.Helper()
		out, err := pass.Run(ctx, opt)
		require.NoError(t, err)
		txt := text(t, metrics.Fleet(out, t0))
		return metricstest.Parse(t, txt), txt
	}

	fams, txt := families(reconcile.Options{})
	value := func(name, colony string) float64 { return fams.Value(t, name, "colony", colony) }
	require.Equal(t, 5.0, value("sporectl_outbox_messages", "own"), txt)
	require.Equal(t, 2.0, value("sporectl_outbox_held_messages", "own"), "o1's two unmarked entries")
	require.Equal(t, 1.0, value("sporectl_spores_over_budget", "own"))
	require.Equal(t, 3.0, value("sporectl_outbox_messages", "lab"))
	require.Equal(t, 1.0, value("sporectl_outbox_held_messages", "lab"), "l1's entry, not l2's marked one or the [arch]'s")
	require.Equal(t, 2.0, value("sporectl_spores_over_budget", "lab"), "l1 and l2 by their colony's budget, not the [arch]")
	require.Equal(t, 0.0, value("sporectl_outbox_held_messages", "free"))
	require.Equal(t, 0.0, value("sporectl_spores_over_budget", "free"))
	for _, name := range []string{"sporectl_outbox_held_messages", "sporectl_spores_over_budget"} {
		require.Equal(t, 3, fams.Series(name), name)
	}
	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, txt) })

	// A delivering pass gives o1 its marked entry and holds the others.
	fams, txt = families(reconcile.Options{Deliver: true})
	prompts := rt.BridgeOf("o1").Prompts()
	require.Len(t, prompts, 1)
	require.Equal(t, "p-1", prompts[0].ID)
	require.Equal(t, 4.0, value("sporectl_outbox_messages", "own"), txt)
	require.Equal(t, 2.0, value("sporectl_outbox_held_messages", "own"))
	require.Equal(t, 1.0, value("sporectl_spores_over_budget", "own"))
}

// TestFleetSpendIsTheGatewaysCount: with the gateway on (the default),
// the tokens and cost today are what the gateway counted (input with
// cache creation, cache reads left out; yesterday's not today's), not
// what the agents report.
func TestFleetSpendIsTheGatewaysCount(t *testing.T) {
	ctx := context.Background()
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	sp := state.Spore{Wish: state.Wish{ID: "a1", Colony: "a", Rank: state.RankSpore, Desired: state.Paused, Created: t0.Add(-48 * time.Hour), Updated: t0.Add(-48 * time.Hour)}}
	sp.Activity = []state.HourActivity{{Hour: t0.Add(-time.Hour), Turns: 1, InputTokens: 30_000_000, CostMicros: 9_000_000}} // the agent's word
	statetest.Create(t, st, sp)
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, c := range []struct {
			id string
			at time.Time
			u  state.Usage
		}{
			{"msg_1", t0.Add(-20 * time.Hour), state.Usage{InputTokens: 7777, CostMicros: 7_000_000}}, // yesterday
			{"msg_2", t0.Add(-time.Hour), state.Usage{InputTokens: 100, CacheCreationTokens: 20, CacheReadTokens: 5000, OutputTokens: 30, CostMicros: 250_000}},
		} {
			if _, err := state.CountModelCall(ctx, tx, "a1", c.id, c.u, c.at); err != nil {
				return err
			}
		}
		return nil
	}))
	pass := reconciletest.NewPass(t, st, reconciletest.WithFake(reconciletest.New()), reconciletest.At(t0))
	out, err := pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	fams := metricstest.Parse(t, text(t, metrics.Fleet(out, t0)))
	require.Equal(t, 120.0, fams.Value(t, "sporectl_tokens_today", "colony", "a", "kind", "input"))
	require.Equal(t, 30.0, fams.Value(t, "sporectl_tokens_today", "colony", "a", "kind", "output"))
	require.InDelta(t, 0.25, fams.Value(t, "sporectl_cost_today_dollars", "colony", "a"), 1e-9)
}
