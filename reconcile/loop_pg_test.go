package reconcile_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// newPGEnv is newEnv over a fresh PostgreSQL database of the package's
// benchmark server (started on first use, removed by TestMain): it skips
// without PostgreSQL, and fails when CI is set.
func newPGEnv(t *testing.T, ids ...string) (*env, string) {
	t.Helper()
	st, url := statetest.Postgres(t, state.Settings{Runtime: "local"})
	return newEnvOn(t, st, ids...), url
}

// TestSwarmLoopPGOverlappingPassesPromptOncePerDueTime is the PostgreSQL
// row of TestSwarmLoopConcurrentPassesRecordOnePrompt, over several due
// times: at each, eight passes run at once (as overlapping cron
// reconciles and serve replicas do), each with its own connection pool
// to the store; the loop's prompt is recorded once per due time and
// reaches the bridge once, and the next due time is moved on once.
func TestSwarmLoopPGOverlappingPassesPromptOncePerDueTime(t *testing.T) {
	e, url := newPGEnv(t, "orch")
	every := time.Hour
	first := e.now.Add(every)
	e.update("orch", func(sp *state.Spore) {
		sp.Rank, sp.Swarm, sp.Desired = state.RankSwarm, "s1", state.Running
		sp.Loop, sp.LoopDue = state.Duration(every), first
		sp.Generation++
	})
	e.heal() // starts it
	b := e.rt.BridgeOf("orch")
	loopEvents := func() []state.Event {
		var out []state.Event
		for _, ev := range e.events("orch") {
			if ev.Kind == state.KindMessage && ev.From == reconcile.LoopFrom {
				out = append(out, ev)
			}
		}
		return out
	}
	loopPrompts := func() []string {
		var out []string
		for _, p := range b.Prompts() {
			if strings.HasPrefix(p.Text, reconcile.LoopMark) {
				out = append(out, p.ID)
			}
		}
		return out
	}
	const passes, ticks = 8, 3
	for tick := 1; tick <= ticks; tick++ {
		e.now = first.Add(time.Duration(tick-1) * every)
		// Bridge down on the first tick (every recorded prompt stays
		// visible in the outbox), up on the others (recorded and
		// delivered in the same passes).
		b.SetUp(tick != 1)
		var wg sync.WaitGroup
		errs := make(chan error, passes)
		for range passes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				st, err := pgstore.Open(ctx, url, pgstore.Options{})
				if err != nil {
					errs <- err
					return
				}
				defer st.Close()
				p := e.pass()
				p.Store = st
				_, err = p.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, loopEvents(), tick, "tick %d: one loop prompt per due time, however many passes", tick)
		require.Equal(t, e.now.Add(every), e.spore("orch").LoopDue, "tick %d: the next due time", tick)
		if tick == 1 {
			require.Len(t, e.pending("orch"), 1, "one entry waits for the bridge")
			require.Empty(t, loopPrompts())
			continue
		}
		e.heal() // whatever a racing pass left queued
		require.Empty(t, e.pending("orch"))
		require.Len(t, loopPrompts(), tick, "tick %d: each due time's prompt reached the bridge once", tick)
	}
	ids := map[string]bool{}
	for _, ev := range loopEvents() {
		require.False(t, ids[ev.Action], "entry %s recorded twice", ev.Action)
		ids[ev.Action] = true
	}
	for _, id := range loopPrompts() {
		require.True(t, ids[id], "the bridge got %s, which the store does not hold", id)
	}
}
