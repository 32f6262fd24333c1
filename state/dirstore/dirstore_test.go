package dirstore

import (
	"context"
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
func TestContractCompacting(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store { return newTestStore(t, Options{CompactBytes: 1}) })
}
