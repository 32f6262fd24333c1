package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testIDs: IDs lists every spore's id, sorted, as Spores would; inside an
// Update it sees the transaction's own creates and deletes.
func testIDs(t *testing.T, s state.Store) {
	ctx := t.Context()
	ids := func(tx state.Tx) []string {
		got, err := tx.IDs(ctx)
		require.NoError(t, err)
		return got
	}
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		require.Empty(t, ids(tx))
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"m-2", "a-1", "z-9", "m-10"} {
			if err := tx.CreateSpore(ctx, Spore(id)); err != nil {
				return err
			}
		}
		require.Equal(t, []string{"a-1", "m-10", "m-2", "z-9"}, ids(tx), "its own creates, bytewise order")
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.DeleteSpore(ctx, "m-10"); err != nil {
			return err
		}
		if err := tx.CreateSpore(ctx, Spore("b-3")); err != nil {
			return err
		}
		require.Equal(t, []string{"a-1", "b-3", "m-2", "z-9"}, ids(tx), "its own delete and create")
		return nil
	}))
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		require.NoError(t, err)
		var want []string
		for _, sp := range all {
			want = append(want, sp.ID)
		}
		require.Equal(t, want, ids(tx), "the ids of Spores, in its order")
		require.Equal(t, []string{"a-1", "b-3", "m-2", "z-9"}, ids(tx))
		return nil
	}))
	// The caller may change what it was given.
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		got := ids(tx)
		got[0] = "changed"
		require.Equal(t, "a-1", ids(tx)[0])
		return nil
	}))
}
