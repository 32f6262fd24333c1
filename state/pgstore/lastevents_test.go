package pgstore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestLastEventsLocksInUpdate: inside an Update LastEvents locks the
// spores it reads, so two Updates that each append "after N", N read
// with LastEvents, serialize: the second reads the first's event and no
// N is written twice. It also keeps the lock order: an Update that holds
// "c" and reads "b" and "a" only tries their locks, and when they are
// taken runs again, taking them in order, and reads what the other wrote.
func TestLastEventsLocksInUpdate(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a", "b", "c"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, Text: "after 0"}}); err != nil {
				return err
			}
		}
		return nil
	}))
	next := func(lockFirst string) func(tx state.Tx) error {
		return func(tx state.Tx) error {
			if lockFirst != "" {
				if _, err := tx.Spore(ctx, lockFirst); err != nil {
					return err
				}
			}
			last, err := tx.LastEvents(ctx, []string{"b", "a"})
			if err != nil {
				return err
			}
			for _, id := range []string{"a", "b"} {
				text := "after " + strconv.FormatUint(last[id].Seq, 10)
				if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, Text: text}}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	racePair(t, s, next(""), next(""))
	racePair(t, s, next(""), next("c"))
	for _, id := range []string{"a", "b"} {
		var evs []state.Event
		require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; evs, err = tx.Events(ctx, id, 0, 0); return err }))
		var texts []string
		for _, e := range evs {
			texts = append(texts, e.Text)
		}
		require.Equal(t, []string{"after 0", "after 1", "after 2", "after 3", "after 4"}, texts, id)
	}
}
