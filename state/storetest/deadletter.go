package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testDeadLetters: Bury takes a queued entry out of the queue (Outbox,
// Pending) into the dead letters, in queue order, with its reason and
// time; what was behind it is first; its id still makes Enqueue a no-op;
// Dequeue drops a dead letter as it drops a queued entry; a reason that
// breaks the grammar, an entry that is not queued and an entry given
// dead to Enqueue are refused with nothing written.
func testDeadLetters(t *testing.T, s state.Store) {
	create(t, s, "one", "two")
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, e := range []state.OutboxEntry{
			{ID: "m1", Spore: "one", From: "user:a", Text: "first", At: t0},
			{ID: "m2", Spore: "one", From: "user:a", Text: "second", At: t0, Wake: true},
			{ID: "m3", Spore: "one", From: "spore:two", Text: "third", At: t0},
			{ID: "m1", Spore: "two", From: "user:a", Text: "other", At: t0},
		} {
			if _, err := tx.Enqueue(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}))
	at := t0.Add(time.Hour)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.Bury(ctx, "one", "m2", state.DeadLetter{Reason: "bridge answered 413: too large", At: at}); err != nil {
			return err
		}
		return tx.Bury(ctx, "one", "m1", state.DeadLetter{Reason: "bridge answered 400: bad", At: at.Add(time.Second)})
	}))
	ids := func(es []state.OutboxEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	outbox := func(id string) []state.OutboxEntry {
		return view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, id) })
	}
	dead := func(id string) []state.OutboxEntry {
		return view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.DeadLetters(ctx, id) })
	}
	require.Equal(t, []string{"m3"}, ids(outbox("one")), "the queue moves on past its dead letters")
	d := dead("one")
	require.Equal(t, []string{"m1", "m2"}, ids(d), "dead letters in queue order")
	require.Equal(t, &state.DeadLetter{Reason: "bridge answered 400: bad", At: at.Add(time.Second)}, d[0].Dead)
	require.Equal(t, "second", d[1].Text)
	require.True(t, d[1].Wake, "a dead letter keeps what it was")
	require.Equal(t, &state.DeadLetter{Reason: "bridge answered 413: too large", At: at}, d[1].Dead)
	require.Empty(t, dead("two"))
	require.Equal(t, []string{"m1"}, ids(outbox("two")), "another spore's entry of the same id is untouched")
	pending := view(t, s, func(ctx context.Context, tx state.Tx) (map[string][]state.OutboxEntry, error) { return tx.Pending(ctx) })
	require.Equal(t, []string{"m3"}, ids(pending["one"]))
	counts := func() map[string]int {
		return view(t, s, func(ctx context.Context, tx state.Tx) (map[string]int, error) { return tx.DeadLetterCounts(ctx) })
	}
	require.Equal(t, map[string]int{"one": 2}, counts())

	// A dead letter's id is still taken: re-sending it queues nothing.
	var added bool
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		var err error
		added, err = tx.Enqueue(ctx, state.OutboxEntry{ID: "m2", Spore: "one", From: "user:a", Text: "again", At: t0})
		return err
	}))
	require.False(t, added)

	refused := map[string]func(tx state.Tx) error{
		"already dead":  func(tx state.Tx) error { return tx.Bury(ctx, "one", "m2", state.DeadLetter{Reason: "x", At: at}) },
		"missing entry": func(tx state.Tx) error { return tx.Bury(ctx, "one", "nope", state.DeadLetter{Reason: "x", At: at}) },
	}
	for name, fn := range refused {
		require.ErrorIs(t, s.Update(ctx, fn), state.ErrNotFound, name)
	}
	invalid := map[string]func(tx state.Tx) error{
		"empty reason":    func(tx state.Tx) error { return tx.Bury(ctx, "one", "m3", state.DeadLetter{At: at}) },
		"two-line reason": func(tx state.Tx) error { return tx.Bury(ctx, "one", "m3", state.DeadLetter{Reason: "a\nb", At: at}) },
		"long reason": func(tx state.Tx) error {
			return tx.Bury(ctx, "one", "m3", state.DeadLetter{Reason: string(make([]byte, state.MaxDeadReason+1)), At: at})
		},
		"no time": func(tx state.Tx) error { return tx.Bury(ctx, "one", "m3", state.DeadLetter{Reason: "x"}) },
		"enqueued as dead": func(tx state.Tx) error {
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m9", Spore: "one", From: "user:a", Text: "t", Dead: &state.DeadLetter{Reason: "x", At: at}})
			return err
		},
	}
	for name, fn := range invalid {
		var ie *state.InvalidError
		require.ErrorAs(t, s.Update(ctx, fn), &ie, name)
	}
	require.Equal(t, []string{"m3"}, ids(outbox("one")), "nothing refused was written")

	// Dequeue drops a dead letter; the spore with only dead letters left
	// is absent from Pending.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.Dequeue(ctx, "one", "m2"); err != nil {
			return err
		}
		return tx.Bury(ctx, "one", "m3", state.DeadLetter{Reason: "bridge answered 422", At: at})
	}))
	require.Equal(t, []string{"m1", "m3"}, ids(dead("one")))
	require.Empty(t, outbox("one"))
	pending = view(t, s, func(ctx context.Context, tx state.Tx) (map[string][]state.OutboxEntry, error) { return tx.Pending(ctx) })
	require.NotContains(t, pending, "one")
	require.Equal(t, []string{"m1"}, ids(pending["two"]))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		p, err := tx.Pending(ctx)
		require.NotContains(t, p, "one", "inside an Update too")
		return err
	}))
	require.ErrorIs(t, s.Update(ctx, func(tx state.Tx) error { return tx.Dequeue(ctx, "one", "m2") }), state.ErrNotFound)
	require.Equal(t, map[string]int{"one": 2}, counts())
	// Counts see the transaction's own writes; a deleted spore has none.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.Bury(ctx, "two", "m1", state.DeadLetter{Reason: "x", At: at}); err != nil {
			return err
		}
		c, err := tx.DeadLetterCounts(ctx)
		require.Equal(t, map[string]int{"one": 2, "two": 1}, c)
		return err
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "one") }))
	require.Equal(t, map[string]int{"two": 1}, counts())
}
