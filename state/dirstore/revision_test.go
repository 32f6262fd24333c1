package dirstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

func revisionOf(t *testing.T, s *Store) string {
	t.Helper()
	var rev string
	require.NoError(t, s.View(context.Background(), func(tx state.Tx) error {
		var err error
		rev, err = tx.Revision(context.Background())
		return err
	}))
	return rev
}

// A store made again at the same path, with the same transactions, has
// other revisions; so does a state.json replaced by hand with no
// transaction, even by the same bytes.
func TestRevisionNamesTheStoreAndItsSnapshot(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "store")
	build := func() *Store {
		s, created, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
		require.NoError(t, err)
		require.True(t, created)
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("a")) }))
		return s
	}
	s := build()
	first := revisionOf(t, s)
	require.NoError(t, s.Close())
	require.NoError(t, os.RemoveAll(root))
	s = build()
	again := revisionOf(t, s)
	require.NotEqual(t, first, again, "a store made again")
	require.NoError(t, s.Close())

	p := filepath.Join(root, snapshotFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p+".new", b, 0o600))
	require.NoError(t, os.Rename(p+".new", p))
	s, err = Open(ctx, root, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NotEqual(t, again, revisionOf(t, s), "state.json replaced by hand")
}
