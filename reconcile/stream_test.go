package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// stream runs the streamed pass, keeping copies of the rows it hands on.
func (e *env) stream() ([]reconcile.SporeHealth, reconcile.Streamed, error) {
	var rows []reconcile.SporeHealth
	got, err := e.pass().Stream(context.Background(), func(h *reconcile.SporeHealth) error {
		rows = append(rows, *h)
		return nil
	})
	return rows, got, err
}

// quietFleet is a fleet in which every fact a row shows is set on some
// spore: a colony budget and its spend, a spore's own budget, a schedule,
// a queued message, a dead letter, a failed tree while asleep, a spore
// that needs attention (its breaker open), an orphan; its health recorded by a pass.
func quietFleet(t *testing.T, st state.Store) *env {
	ctx := context.Background()
	e := newEnvOn(t, st, "a", "b", "c", "d", "e")
	direct(t, st) // budgets judge the agents' reports
	e.schedule(state.Schedule{Name: "standup", To: "b", Cron: "0 9 * * *", Prompt: "Say what you did.", Done: e.now})
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		c := s.Colony("lab")
		c.Budget = state.Budget{CostPerDayMicros: 1_000_000}
		if err := tx.PutSettings(ctx, s.WithColony("lab", c)); err != nil {
			return err
		}
		sp, err := tx.Spore(ctx, "a")
		if err != nil {
			return err
		}
		sp.Activity = []state.HourActivity{{Hour: e.now.Truncate(time.Hour), CostMicros: 600_000}}
		if err := tx.PutStatus(ctx, "a", sp.StatusAtWish()); err != nil {
			return err
		}
		if sp, err = tx.Spore(ctx, "e"); err != nil {
			return err
		}
		sp.BreakerOpen = true
		if err := tx.PutStatus(ctx, "e", sp.StatusAtWish()); err != nil {
			return err
		}
		for _, id := range []string{"c", "d"} {
			if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m-" + id, Spore: id, From: "user:ann", Text: "hi"}); err != nil {
				return err
			}
		}
		return tx.Bury(ctx, "d", "m-d", state.DeadLetter{Reason: "refused for good", At: e.now})
	}))
	e.rt.Kill("e", "exited")
	e.rt.Set(reconcile.PodObservation{ID: "ghost", State: reconcile.PodFailed})
	e.run(reconcile.Options{}) // records each one's health
	return e
}

// The streamed pass hands on, row for row, the Result the whole pass
// makes of a fleet with nothing to record, with its orphans and how many
// rows need attention, and writes nothing; on both stores (the directory
// store's rows read one by one, PostgreSQL's in one read).
func TestStreamIsThePassOfAQuietFleet(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := quietFleet(t, open(t))
			before := e.st.Updates.Load()
			rows, got, err := e.stream()
			require.NoError(t, err)
			require.Equal(t, before, e.st.Updates.Load(), "the streamed pass writes nothing")

			want := e.run(reconcile.Options{})
			require.Equal(t, before, e.st.Updates.Load(), "nor did the whole pass: the fleet was quiet")
			require.Equal(t, want.Spores, rows)
			require.Equal(t, []string{"ghost"}, got.Orphans)
			require.Equal(t, want.Orphans, got.Orphans)
			require.Equal(t, len(rows), got.Spores)
			bad := 0
			for _, h := range want.Spores {
				if !policy.OK(h.Effective) {
					bad++
				}
			}
			require.Equal(t, 1, bad, "e's open breaker")
			require.Equal(t, bad, got.Attention)

			// Each fact is on its row (so the comparison above compares them).
			by := map[string]reconcile.SporeHealth{}
			for _, h := range rows {
				by[h.ID] = h
			}
			require.NotNil(t, by["a"].Spend, "a's spend, its colony's budget")
			require.Equal(t, int64(600_000), by["a"].Spend.CostMicros)
			require.NotNil(t, by["b"].NextSchedule, "b's schedule")
			require.Equal(t, 1, by["c"].Pending)
			require.Equal(t, 1, by["d"].DeadLetters)
		})
	}
}

// Whatever the whole pass would record, or could not judge, the streamed
// pass leaves to it (ErrNotQuiet), having written nothing: a health not
// recorded yet, a running bridge to ask and read lines from, an
// observation that failed.
func TestStreamLeavesWhatAPassRecordsToThePass(t *testing.T) {
	cases := map[string]func(e *env){
		"health not recorded": func(e *env) {},
		"a bridge to ask": func(e *env) {
			e.run(reconcile.Options{})
			e.rt.Set(reconcile.PodObservation{ID: "b", State: reconcile.PodRunning, Ready: true})
		},
		"observation failed": func(e *env) {
			e.run(reconcile.Options{})
			e.rt.ObserveErr = errors.New("the runtime is away")
		},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "a", "b", "c")
			set(e)
			before := e.st.Updates.Load()
			_, _, err := e.stream()
			require.ErrorIs(t, err, reconcile.ErrNotQuiet)
			require.Equal(t, before, e.st.Updates.Load(), "nothing written")
			require.Zero(t, e.rt.Calls("Bridge"), "no bridge asked")
		})
	}
}

// TestAPassTakesTheStreamedLook: a streamed pass that finds something to
// record hands on its look at the runtime, and the whole pass that
// follows takes it instead of observing again: one look per command,
// and the same result as a pass that looked itself.
func TestAPassTakesTheStreamedLook(t *testing.T) {
	e := newEnv(t, "a", "b", "c")
	e.run(reconcile.Options{})
	e.rt.Set(reconcile.PodObservation{ID: "b", State: reconcile.PodRunning, Ready: true})
	_, got, err := e.stream()
	require.ErrorIs(t, err, reconcile.ErrNotQuiet)
	require.NotNil(t, got.Fleet, "the look was made")
	require.Contains(t, got.Fleet.Spores, "b")

	looks := e.rt.Calls("Observe")
	taken, err := e.pass().Run(context.Background(), reconcile.Options{Looked: got.Fleet})
	require.NoError(t, err)
	require.Equal(t, looks, e.rt.Calls("Observe"), "the runtime is not asked again")
	own, err := e.pass().Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	require.Equal(t, looks+1, e.rt.Calls("Observe"))
	require.Equal(t, own.Result.Spores, taken.Result.Spores)

	// A pass over named spores looks at those alone, whatever it is given.
	_, err = e.pass().Run(context.Background(), reconcile.Options{IDs: []string{"b"}, Looked: got.Fleet})
	require.NoError(t, err)
	require.Equal(t, looks+2, e.rt.Calls("Observe"))
}
