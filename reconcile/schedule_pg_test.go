package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
)

// TestScheduledPromptPGOverlappingPassesRecordEachSlotOnce: at each of
// several slots, eight passes run at once, each with its own connection
// pool to the store (two loops, a CronJob and serve's passes on one
// database); the slot's prompt is recorded once, reaches the bridge
// once, and the claim is the slot. A stretch missed between two rounds
// is caught up once.
func TestScheduledPromptPGOverlappingPassesRecordEachSlotOnce(t *testing.T) {
	e, url := newPGEnv(t, "w1")
	e.awake("w1")
	b := e.rt.BridgeOf("w1")
	e.schedule(state.Schedule{Name: "tick", To: "w1", Cron: "* * * * *", Prompt: "tick", Done: e.now})
	const passes, rounds = 8, 4
	start := e.now
	for round := 1; round <= rounds; round++ {
		// Round 3 comes five minutes after round 2: its slot alone.
		e.now = start.Add(time.Duration(round)*time.Minute + 10*time.Second)
		if round >= 3 {
			e.now = e.now.Add(5 * time.Minute)
		}
		b.SetUp(round != 1) // the first round's prompt waits in the outbox
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
		require.Len(t, e.scheduledEvents("w1"), round, "round %d: one prompt per slot, however many passes", round)
		require.Equal(t, e.now.Truncate(time.Minute), e.claimed("tick"), "round %d: the claim is the slot", round)
	}
	e.heal()
	require.Empty(t, e.pending("w1"))
	seen := map[string]bool{}
	for _, ev := range e.scheduledEvents("w1") {
		require.False(t, seen[ev.From], "slot %s recorded twice", ev.From)
		seen[ev.From] = true
	}
	delivered := map[string]int{}
	for _, p := range b.Prompts() {
		delivered[p.ID]++
	}
	require.Len(t, delivered, rounds)
	for id, n := range delivered {
		require.Equal(t, 1, n, "%s delivered once", id)
	}
}
