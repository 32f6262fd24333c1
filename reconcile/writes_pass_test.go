package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestPassWritesWhatItDecidedInOneTransaction counts the write
// transactions of a pass that has everything to record at once: the
// [arch] found asleep (upkeep wakes it), a `swarm loop` due, a spore
// idle past its sleep-after, one over its budget (its colony mycologist
// summoned), lines ingested and deliveries made. Such a pass writes what
// it decided in one transaction before it acts (the wishes act carries
// out, docs/architecture.md "The pass"), one per start (the started
// spore's token, at the moment the runtime asks for it) and the commit:
// three here, with the [arch] the one start.
func TestPassWritesWhatItDecidedInOneTransaction(t *testing.T) {
	e := newEnv(t)
	direct(t, e.st) // a's budget judged on its agent's report
	t0 := e.now
	awake := func(id string, rank state.Rank, set func(*state.Spore)) {
		sp := state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: rank, Desired: state.Running, Created: t0, Updated: t0}}
		if set != nil {
			set(&sp)
		}
		statetest.Create(t, e.st, sp)
	}
	every := 10 * time.Minute
	later := t0.Add(31 * time.Minute)
	awake("myc", state.RankColony, nil)
	awake("orch", state.RankSwarm, func(sp *state.Spore) {
		sp.Swarm, sp.Loop, sp.LoopDue = "s1", state.Duration(every), later
	})
	awake("a", state.RankSpore, func(sp *state.Spore) { sp.Budget = state.Budget{TokensPerDay: 20} })
	awake("b", state.RankSpore, func(sp *state.Spore) { sp.SleepAfter = state.Duration(30 * time.Minute) })
	e.heal() // starts the four
	require.Equal(t, 4, e.rt.Calls("Start"))
	statetest.Create(t, e.st, state.Spore{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch, Desired: state.Paused, Created: t0, Updated: t0}})

	// Half an hour on: a's turn of 25 tokens ends, b has done nothing.
	e.rt.BridgeOf("a").Write(passText, budgetResult)
	e.now = later
	before := e.st.Updates.Load()
	out := e.heal()
	require.Equal(t, before+3, e.st.Updates.Load(),
		"one transaction for what the pass decided before acting, one for the [arch]'s start, one commit")

	// Everything was decided, recorded and done.
	require.Equal(t, state.Running, e.spore("arch").Desired, "the [arch] is always on")
	require.Equal(t, 5, e.rt.Calls("Start"), "and started in the same pass")
	require.Equal(t, state.ByBudget, e.spore("a").DesiredBy)
	require.Equal(t, state.ByIdle, e.spore("b").DesiredBy)
	require.Equal(t, 2, e.rt.Calls("Stop"), "a and b stopped")
	require.Equal(t, later.Add(every), e.spore("orch").LoopDue)
	prompts := e.rt.BridgeOf("orch").Prompts()
	require.True(t, strings.HasPrefix(prompts[len(prompts)-1].Text, reconcile.LoopMark), "the loop prompt delivered in the same pass")
	require.Empty(t, e.pending("orch"))
	require.Len(t, e.pending("myc"), 1, "the budget's summons queued for the colony mycologist")
	require.Equal(t, "budget", health(out, "a").SleptBy)
	require.Equal(t, "idle", health(out, "b").SleptBy)

	// Nothing left to record: the next pass writes only its delivery of the summons.
	before = e.st.Updates.Load()
	e.heal()
	require.Equal(t, before+1, e.st.Updates.Load())
	require.Empty(t, e.pending("myc"))
}

// TestPassThatObservesNothingStillRecordsItsUpkeep: a pass whose runtime
// cannot be observed acts on nothing and records no conclusion about a
// spore, but the upkeep due is the store's own rule, not an observation:
// the [arch] found asleep is wished Running and a due loop prompt queued,
// in one transaction, for the next pass to act on.
func TestPassThatObservesNothingStillRecordsItsUpkeep(t *testing.T) {
	e := newEnv(t, "arch", "orch")
	every := 10 * time.Minute
	e.update("arch", func(sp *state.Spore) { sp.Rank = state.RankArch })
	e.update("orch", func(sp *state.Spore) {
		sp.Rank, sp.Swarm, sp.Desired = state.RankSwarm, "s1", state.Running
		sp.Loop, sp.LoopDue = state.Duration(every), e.now
	})
	ps := e.pass()
	ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) { return nil, errors.New("no cluster") }
	before := e.st.Updates.Load()
	out, err := ps.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	require.Error(t, out.ObserveErr)
	require.Equal(t, before+1, e.st.Updates.Load())
	require.Equal(t, state.Running, e.spore("arch").Desired)
	require.Equal(t, e.now.Add(every), e.spore("orch").LoopDue)
	require.Len(t, e.pending("orch"), 1)
	require.Zero(t, e.rt.Calls("Start"))
}
