package storecopy_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

func dirBackend() backend {
	return backend{"dir", func(t *testing.T) state.Store {
		s, _, err := dirstore.Init(context.Background(), filepath.Join(t.TempDir(), "store"), state.Settings{Runtime: "local"}, dirstore.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}}
}

func backends() []backend { return []backend{dirBackend(), pgBackend()} }
