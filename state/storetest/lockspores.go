package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testLockSpores: LockSpores reads and changes nothing; ids repeated, out
// of order or of no spore are no error; the transaction writes the
// spores it named as usual; in a View it does nothing.
func testLockSpores(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "a", "z")
	spores := func() []state.Spore {
		return view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	}
	before := spores()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		return tx.LockSpores(ctx, []string{"z", "missing", "a", "z"})
	}))
	require.Equal(t, before, spores(), "nothing written")
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.LockSpores(ctx, []string{"z", "a"}); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "z", []state.Event{{Kind: state.KindLifecycle, Text: "z first"}}); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "a", []state.Event{{Kind: state.KindLifecycle, Text: "then a"}})
		return err
	}))
	for _, id := range []string{"a", "z"} {
		h := view(t, s, func(ctx context.Context, tx state.Tx) (state.SporeHead, error) { return tx.Head(ctx, id) })
		require.Equal(t, uint64(1), h.LastSeq, id)
	}
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { return tx.LockSpores(ctx, []string{"a", "z"}) }))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.LockSpores(ctx, nil) }))
}
