package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// init's flag defaults are the model's: a new store holds state's spec
// defaults and storage class and agent's default kind, and a spore created
// without flags records them.
func TestInitWritesTheModelsDefaults(t *testing.T) {
	ctx := t.Context()
	store := filepath.Join(t.TempDir(), "s")
	mustRun(t, store, "init")
	mustRun(t, store, "create", "a")

	st, err := dirstore.Open(ctx, store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	var settings state.Settings
	var sp state.Spore
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		if settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		sp, err = tx.Spore(ctx, "a")
		return err
	}))
	require.Equal(t, state.DefaultSpec(), settings.DefaultSpec)
	require.Equal(t, state.DefaultStorageClass, settings.StorageClass)
	require.Equal(t, agent.Default, settings.Agent)
	require.Equal(t, state.DefaultSpec(), sp.Spec, "create fills the spec from the store")
}

// init and bridge take every kind of agent and refuse any other with the
// same usage error.
func TestAgentFlag(t *testing.T) {
	for _, kind := range agent.Kinds() {
		store := filepath.Join(t.TempDir(), "s")
		mustRun(t, store, "init", "--agent", kind)
	}
	for _, args := range [][]string{{"init", "--agent", "gpt"}, {"bridge", "--agent", "gpt", "--home", t.TempDir()}} {
		store := filepath.Join(t.TempDir(), "s")
		r := run(t, store, args...)
		require.Equal(t, ExitUsage, r.code, "%v", args)
		require.Contains(t, r.err, "error: invalid value \"gpt\" for --agent: use claude or echo\n", "%v", args)
		require.Empty(t, r.out)
		require.NoDirExists(t, store, "%v", args)
	}
}
