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

func newTestStore(t *testing.T, opts Options) *Store {
	t.Helper()
	s, created, err := Init(context.Background(), filepath.Join(t.TempDir(), "store"), state.Settings{Runtime: "local"}, opts)
	require.NoError(t, err)
	require.True(t, created)
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store { return newTestStore(t, Options{}) })
}

// TestContractCompacting runs the contract with a tiny compaction
// threshold, so nearly every commit also folds the log into a snapshot.
// TestContractShared: the cases that need a second handle on one store,
// as a second process opens it.
func TestContractShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (state.Store, storetest.Reopen) {
		s := newTestStore(t, Options{CompactBytes: 4096})
		return s, func(t *testing.T) state.Store {
			o, err := Open(t.Context(), s.root, Options{CompactBytes: 4096})
			require.NoError(t, err)
			return o
		}
	})
}

func TestContractCompacting(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store { return newTestStore(t, Options{CompactBytes: 1}) })
}

// TestInitInExistingEmptyDir: `mkdir d && sporectl --store d init` works,
// and an in-place init that died before FORMAT is finished by the next
// init, while a directory holding anything else is refused untouched.
func TestInitInExistingEmptyDir(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, created, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("a")) }))

	// An in-place init killed before FORMAT: everything but FORMAT.
	partial := t.TempDir()
	require.NoError(t, buildStore(partial, state.Settings{Runtime: "local"}))
	require.NoError(t, os.Remove(filepath.Join(partial, formatFile)))
	_, err = Open(ctx, partial, Options{})
	require.ErrorIs(t, err, state.ErrNoStore)
	_, created, err = Init(ctx, partial, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	require.True(t, created)

	// A store whose FORMAT was deleted still holds data: refused.
	require.NoError(t, os.Remove(filepath.Join(root, formatFile)))
	_, _, err = Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "refusing to write into it")
	require.FileExists(t, filepath.Join(root, snapshotFile))
}
