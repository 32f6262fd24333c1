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
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

func (e *env) update(id string, fn func(*state.Spore)) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		fn(&sp)
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
}

func (e *env) pending(id string) []state.OutboxEntry {
	e.t.Helper()
	out := statetest.Read(e.t, e.st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, id) })
	return out
}

func TestArchAsleepIsWokenAndStartedByAHealingPass(t *testing.T) {
	for _, desired := range []state.Desired{state.Paused, state.Stopped} {
		t.Run(string(desired), func(t *testing.T) {
			e := newEnv(t, "arch", "a")
			e.update("arch", func(sp *state.Spore) { sp.Rank, sp.Desired = state.RankArch, desired })
			gen := e.spore("arch").Generation

			// A read-only command does not act.
			e.run(reconcile.Options{})
			require.Equal(t, desired, e.spore("arch").Desired)

			out := e.heal()
			sp := e.spore("arch")
			require.Equal(t, state.Running, sp.Desired, "the [arch] is always on")
			require.Equal(t, gen+1, sp.Generation)
			require.Equal(t, 1, e.rt.Calls("Start"), "started in the same pass")
			require.Equal(t, state.Paused, e.spore("a").Desired, "an ordinary spore sleeps on")
			require.True(t, health(out, "arch").Desired == state.Running)
			var wake []state.Event
			for _, ev := range e.events("arch") {
				if ev.Action == "wake" {
					wake = append(wake, ev)
				}
			}
			require.Len(t, wake, 1)
			require.Contains(t, wake[0].Text, "the [arch] mycologist is always on")
			require.Contains(t, wake[0].Text, "desired "+string(desired)+" → Running")

			// Running now: nothing more to record.
			n := len(e.events("arch"))
			e.heal()
			require.Equal(t, state.Running, e.spore("arch").Desired)
			require.Equal(t, gen+1, e.spore("arch").Generation)
			require.Equal(t, 1, e.rt.Calls("Start"))
			for _, ev := range e.events("arch")[n:] {
				require.NotEqual(t, "wake", ev.Action)
			}
		})
	}
}

func TestArchDryRunWritesNothing(t *testing.T) {
	e := newEnv(t, "arch")
	e.update("arch", func(sp *state.Spore) { sp.Rank = state.RankArch })
	before := e.st.Updates.Load()
	e.run(reconcile.Options{Heal: true, Deliver: true, DryRun: true})
	require.Equal(t, before, e.st.Updates.Load())
	require.Equal(t, state.Paused, e.spore("arch").Desired)
}

func TestSwarmLoopPromptsOncePerDueTimeAndSkipsMissedTicks(t *testing.T) {
	e := newEnv(t, "orch")
	every := 10 * time.Minute
	first := e.now.Add(every)
	e.update("orch", func(sp *state.Spore) {
		sp.Rank, sp.Swarm, sp.Desired = state.RankSwarm, "s1", state.Running
		sp.Loop, sp.LoopDue = state.Duration(every), first
		sp.Generation++
	})
	e.heal() // starts it
	b := e.rt.BridgeOf("orch")
	loops := func() []string {
		var out []string
		for _, p := range b.Prompts() {
			if strings.HasPrefix(p.Text, reconcile.LoopMark) {
				out = append(out, p.ID)
			}
		}
		return out
	}

	// Not due yet.
	e.now = first.Add(-time.Second)
	e.heal()
	require.Empty(t, loops())
	require.Equal(t, first, e.spore("orch").LoopDue)

	// Due: one prompt, delivered in the same pass, and the next due time.
	e.now = first
	e.heal()
	require.Len(t, loops(), 1)
	require.Equal(t, first.Add(every), e.spore("orch").LoopDue)
	require.Empty(t, e.pending("orch"))
	require.Contains(t, b.Prompts()[len(b.Prompts())-1].Text, "every 10m0s")
	require.Equal(t, reconcile.LoopFrom, b.Prompts()[len(b.Prompts())-1].From)
	e.heal()
	require.Len(t, loops(), 1, "once per due time")

	// Three ticks missed (no pass ran): one prompt, not a burst; the
	// schedule keeps its phase.
	e.now = first.Add(3*every + time.Minute)
	e.heal()
	require.Len(t, loops(), 2)
	require.Equal(t, first.Add(4*every), e.spore("orch").LoopDue)

	// The event in its log names the sender and the entry.
	var msgs []state.Event
	for _, ev := range e.events("orch") {
		if ev.Kind == state.KindMessage {
			msgs = append(msgs, ev)
		}
	}
	require.Len(t, msgs, 2)
	require.Equal(t, reconcile.LoopFrom, msgs[1].From)
	require.Equal(t, loops()[1], msgs[1].Action)

	// Asleep: not prompted, the due time kept; a read-only pass never prompts.
	e.now = first.Add(5 * every)
	e.run(reconcile.Options{})
	require.Len(t, loops(), 2)
	e.setDesired("orch", state.Paused)
	e.heal()
	require.Empty(t, e.pending("orch"))
	require.Equal(t, first.Add(4*every), e.spore("orch").LoopDue)
}

func TestSwarmLoopConcurrentPassesRecordOnePrompt(t *testing.T) {
	e := newEnv(t, "orch")
	every := time.Hour
	e.update("orch", func(sp *state.Spore) {
		sp.Rank, sp.Swarm, sp.Desired = state.RankSwarm, "s1", state.Running
		sp.Loop, sp.LoopDue = state.Duration(every), e.now.Add(every)
		sp.Generation++
	})
	e.heal()
	// The bridge down: prompts stay in the outbox, so every one recorded
	// is visible there.
	e.rt.BridgeOf("orch").SetUp(false)
	e.now = e.now.Add(every)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.pass().Run(context.Background(), reconcile.Options{Deliver: true})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.Len(t, e.pending("orch"), 1, "one prompt for one due time, however many passes")
	require.Equal(t, e.now.Add(every), e.spore("orch").LoopDue)
}

func TestNextLoopDue(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	m := time.Minute
	require.Equal(t, t0.Add(10*m), reconcile.NextLoopDue(t0, 10*m, t0))
	require.Equal(t, t0.Add(10*m), reconcile.NextLoopDue(t0, 10*m, t0.Add(9*m)))
	require.Equal(t, t0.Add(30*m), reconcile.NextLoopDue(t0, 10*m, t0.Add(25*m)))
	require.Equal(t, t0.Add(5*m), reconcile.NextLoopDue(t0.Add(5*m), 10*m, t0), "not yet due: kept")
	require.Equal(t, t0.Add(10*m), reconcile.NextLoopDue(time.Time{}, 10*m, t0))
	require.True(t, reconcile.NextLoopDue(t0, 0, t0).IsZero())
}
