package colonyspec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// spec.egress is the colony's egress setting: "none" is planned as a
// change with its diff, "all" on a colony that never set it is no change
// (the store keeps the default as ""), an export says "none" and reads
// back as the same, and anything else is refused at its line.
func TestEgressInAColony(t *testing.T) {
	read := func(egress string) []Document {
		t.Helper()
		docs, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  egress: "+egress+"\n  spores: []\n"))
		require.NoError(t, err)
		return docs
	}
	colonyChange := func(p Plan) *Change {
		for i, c := range p.Changes {
			if c.Settings != nil {
				return &p.Changes[i]
			}
		}
		return nil
	}

	p, err := MakePlan(read("none"), nil, state.Settings{}, Options{})
	require.NoError(t, err)
	c := colonyChange(p)
	require.NotNil(t, c, "egress none is a change of the colony")
	require.Equal(t, state.EgressNone, c.Settings.Egress)
	require.Contains(t, c.Diffs, Diff{"egress", "all", "none"})

	p, err = MakePlan(read("all"), nil, state.Settings{}, Options{})
	require.NoError(t, err)
	require.Nil(t, colonyChange(p), "all is the default: nothing to change")

	sealed := state.Settings{}.WithColony("lab", state.ColonySettings{Egress: state.EgressNone})
	p, err = MakePlan(read("all"), nil, sealed, Options{})
	require.NoError(t, err)
	c = colonyChange(p)
	require.NotNil(t, c)
	require.Equal(t, "", c.Settings.Egress, "back to the default")
	require.Contains(t, c.Diffs, Diff{"egress", "none", "all"})

	e := Export("lab", nil, sealed)
	require.NotNil(t, e.Spec.Egress)
	require.Equal(t, "none", *e.Spec.Egress)
	p, err = MakePlan([]Document{e}, nil, sealed, Options{})
	require.NoError(t, err)
	require.Nil(t, colonyChange(p), "the export applied to the same store changes nothing")
	require.Nil(t, Export("lab", nil, state.Settings{}).Spec.Egress, "the default is left out")

	for _, bad := range []string{"some", `""`, "None"} {
		_, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  egress: "+bad+"\n  spores: []\n"))
		require.ErrorContains(t, err, "lab.yaml:5")
		require.ErrorContains(t, err, "spec.egress")
	}
}
