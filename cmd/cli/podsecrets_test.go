package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// init --pod-secret sets the store's pod_secrets whole; the same list
// again changes nothing, an empty name empties it, a spore's Secret is
// refused.
func TestInitPodSecrets(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	listed := func() []string {
		t.Helper()
		st, err := dirstore.Open(context.Background(), root, dirstore.Options{})
		require.NoError(t, err)
		defer st.Close()
		return statetest.Read(t, st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) }).PodSecrets()
	}
	mustRun(t, root, "init", "--runtime", "kube", "--no-operator", "--pod-secret", "team-keys")
	require.Equal(t, []string{"team-keys"}, listed())
	require.Contains(t, mustRun(t, root, "init", "--pod-secret", "team-keys"), "unchanged")
	require.Contains(t, mustRun(t, root, "init", "--pod-secret", "a", "--pod-secret", "b"), "configured")
	require.Equal(t, []string{"a", "b"}, listed(), "replaced whole")

	r := run(t, root, "init", "--pod-secret", "spore-x")
	require.Equal(t, ExitUsage, r.code, r.err)
	require.Contains(t, r.err, `invalid --pod-secret "spore-x": names a spore's own Secret`)
	require.Equal(t, []string{"a", "b"}, listed())

	mustRun(t, root, "init", "--pod-secret", "")
	require.Nil(t, listed(), "'' empties it")
}
