package cli

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// spores lists the ids the rig's store holds.
func (r *applyRig) spores() []string {
	r.t.Helper()
	all, err := state.ViewValue(r.t.Context(), r.st, func(tx state.Tx) ([]state.Spore, error) { return tx.Spores(r.t.Context()) })
	require.NoError(r.t, err)
	ids := make([]string, len(all))
	for i, sp := range all {
		ids[i] = sp.ID
	}
	return ids
}

func TestCreateManyIDsInOneTransaction(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		require.Equal(t, "spore/a created\nspore/b created\nspore/c created\n", r.ok("", "create", "a", "b", "c", "--colony", "lab", "--cpu", "2"))
		require.EqualValues(t, 1, r.writes(), "every id in one transaction")
		for _, id := range []string{"a", "b", "c"} {
			sp := statetest.Spore(t, r.st, id)
			require.Equal(t, "lab", sp.Colony, id)
			require.Equal(t, "2", sp.Spec.CPU, "%s has the flags given", id)
			require.Equal(t, state.Paused, sp.Desired, id)
		}

		require.Equal(t, "spore/d\nspore/e\n", r.ok("", "create", "d", "e", "-o", "name"))
		var js actionResults
		require.NoError(t, json.Unmarshal([]byte(r.ok("", "create", "f", "g", "-o", "json")), &js))
		require.Equal(t, []actionResult{{Kind: "spore", ID: "f", Action: "created"}, {Kind: "spore", ID: "g", Action: "created"}}, js.Results)
		require.ElementsMatch(t, []string{"a", "b", "c", "d", "e", "f", "g"}, r.spores())
	})
}

// One id that cannot be created, anywhere among them, and none is.
func TestCreateManyAllOrNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.ok("", "create", "taken")
		r.ok("", "create", "boss", "--rank", "arch")
		r.ok("", "create", "lab-myco", "--rank", "colony", "--colony", "lab")
		tests := []struct {
			name string
			args []string
			code int
			msg  string
		}{
			{"an id in use, last", []string{"create", "n1", "n2", "taken"}, ExitConflict, "already exists"},
			{"an id in use, first", []string{"create", "taken", "n1", "n2"}, ExitConflict, "already exists"},
			{"an arch when there is one", []string{"create", "n1", "--rank", "arch"}, ExitConflict, "spore boss is already the arch mycologist"},
			{"two colony mycologists of one colony", []string{"create", "n1", "n2", "--rank", "colony", "--colony", "ops"}, ExitConflict, "spore n1 is already colony ops's mycologist"},
			{"a colony's mycologist taken", []string{"create", "n1", "--rank", "colony", "--colony", "lab"}, ExitConflict, "lab-myco"},
			{"an id given twice", []string{"create", "n1", "n2", "n1"}, ExitUsage, `spore id "n1" is given twice`},
			{"a bad id", []string{"create", "n1", "N_2"}, ExitUsage, `invalid spore id "N_2"`},
		}
		for _, tt := range tests {
			before := r.writes()
			res := r.run("", tt.args...)
			require.Equal(t, tt.code, res.code, "%s: %s", tt.name, res.err)
			require.Contains(t, res.err, tt.msg, tt.name)
			require.Empty(t, res.out, "%s prints no spore created", tt.name)
			require.ElementsMatch(t, []string{"taken", "boss", "lab-myco"}, r.spores(), "%s creates none", tt.name)
			if tt.code == ExitUsage {
				require.Equal(t, before, r.writes(), "%s opens no write transaction", tt.name)
			}
		}
	})
}

// Two arch in one create, on a store with none: the second is refused
// as it would be after the first, and neither is created.
func TestCreateManyTwoArch(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		res := r.run("", "create", "x", "y", "--rank", "arch")
		require.Equal(t, ExitConflict, res.code, res.err)
		require.Contains(t, res.err, "spore x is already the arch mycologist")
		require.Empty(t, r.spores())
	})
}

// --wake wakes every spore created, in one pass (as wake of them all).
func TestCreateManyWake(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		ids := make([]string, 20)
		for i := range ids {
			ids[i] = fmt.Sprintf("w-%02d", i)
		}
		res := r.run("", append([]string{"create", "--wake"}, ids...)...)
		require.Equal(t, 0, res.code, res.err)
		for _, id := range ids {
			require.Contains(t, res.out, "spore/"+id+" created\n")
			require.Contains(t, res.out, "spore/"+id+" woken\n")
			require.Equal(t, state.Running, statetest.Spore(t, r.st, id).Desired, id)
		}
	})
}
