package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// `colony set --egress` writes the colony's egress setting (all is the
// default, kept as ""), warns that the local runtime does not enforce
// none, and refuses anything but all and none before the store is read.
func TestColonySetEgress(t *testing.T) {
	store := fixture(t)
	settings := func() state.Settings {
		t.Helper()
		st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
		require.NoError(t, err)
		defer st.Close()
		var s state.Settings
		require.NoError(t, st.View(t.Context(), func(tx state.Tx) error { s, err = tx.Settings(t.Context()); return err }))
		return s
	}

	r := run(t, store, "colony", "set", "lab", "--egress", "none")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "colony/lab configured\n", r.out)
	require.Contains(t, r.err, "local runtime does not confine a spore's network", "the fixture's store is local: it says so")
	require.Equal(t, state.EgressNone, settings().Colony("lab").Egress)
	require.Equal(t, "", settings().Colony("hq").Egress, "another colony keeps the default")

	r = run(t, store, "colony", "set", "lab", "--egress", "all")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "colony/lab configured\n", r.out)
	require.Empty(t, r.err, "all needs no warning")
	require.Equal(t, "", settings().Colony("lab").Egress, "all is the default, kept as nothing")
	require.Equal(t, "colony/lab unchanged\n", mustRun(t, store, "colony", "set", "lab", "--egress", "all"))

	for _, bad := range []string{"some", "", "NONE"} {
		r := run(t, store, "colony", "set", "lab", "--egress", bad)
		require.Equal(t, ExitUsage, r.code, r.err)
		require.Contains(t, r.err, "--egress")
	}
}
