package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// env is a directory store, checked when the test ends, with spores in
// colony lab, asleep (a person's Paused), and the time.
type env struct {
	t   *testing.T
	st  *statetest.Counting
	now time.Time
}

func newEnv(t *testing.T, ids ...string) *env {
	t.Helper()
	st := statetest.Dir(t, state.Settings{Runtime: "local"})
	e := &env{t: t, st: &statetest.Counting{Store: st}, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	for _, id := range ids {
		statetest.Create(t, st, state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Paused, Created: e.now, Updated: e.now}})
	}
	return e
}

// change writes id's record as fn leaves it.
func (e *env) change(id string, fn func(*state.Spore)) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		fn(&sp)
		sp.Generation++
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
}

func (e *env) events(id string) []state.Event {
	e.t.Helper()
	return statetest.Events(e.t, e.st, id)
}

func (e *env) pending(id string) []state.OutboxEntry {
	e.t.Helper()
	return statetest.Read(e.t, e.st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, id) })
}

// deliver takes id's entry out of its outbox, as a pass that delivered it
// does.
func (e *env) deliver(id, entry string) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error { return tx.Dequeue(ctx, id, entry) }))
}
