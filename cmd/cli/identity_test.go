package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// Every start a command makes tells the spore who it is by mycelia's text:
// the runtimes carry it (Launch.Identity) and know nothing of it, so the
// pass the CLI builds must hand it over, whichever rank the spore has.
func TestStartedSporesAreToldWhoTheyAre(t *testing.T) {
	c := newFakeColony(t)
	for _, tc := range []struct {
		id     string
		create []string
		start  []string
	}{
		{"plain", nil, []string{"wake", "plain"}},
		{"member", []string{"--swarm", "pack", "--role", "tester"}, []string{"wake", "member"}},
		{"lead", []string{"--rank", "swarm", "--swarm", "pack"}, []string{"wake", "lead"}},
		{"warden", []string{"--rank", "colony", "--colony", "lab"}, []string{"wake", "warden"}},
		// Found asleep, the [arch] is started by a healing pass.
		{"arch", []string{"--rank", "arch", "--colony", "hq"}, []string{"reconcile"}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			c.ok(append([]string{"create", tc.id}, tc.create...)...)
			require.Empty(t, c.rt.Identity(tc.id), "not started yet")
			c.run("", tc.start...)

			st, err := dirstore.Open(t.Context(), c.store, dirstore.Options{})
			require.NoError(t, err)
			defer st.Close()
			var sp state.Spore
			require.NoError(t, st.View(t.Context(), func(tx state.Tx) error {
				sp, err = tx.Spore(t.Context(), tc.id)
				return err
			}))
			want := mycelia.Identity(sp)
			require.Contains(t, want, "You are spore "+tc.id+",")
			require.Equal(t, want, c.rt.Identity(tc.id))
		})
	}
}
