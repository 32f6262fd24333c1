package mycelia

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func sp(id, colony string, rank state.Rank, swarm, role string) state.Spore {
	return state.Spore{Wish: state.Wish{ID: id, Colony: colony, Rank: rank, Swarm: swarm, Role: role}}
}

func TestReaches(t *testing.T) {
	arch := sp("arch", "lab", state.RankArch, "", "")
	lab := sp("lab-myco", "lab", state.RankColony, "", "")
	far := sp("far-myco", "far", state.RankColony, "", "")
	lead := sp("lead", "lab", state.RankSwarm, "red", "lead")
	lead2 := sp("lead2", "far", state.RankSwarm, "red", "lead")
	a := sp("a", "lab", state.RankSpore, "red", "coder")
	b := sp("b", "lab", state.RankSpore, "", "")
	x := sp("x", "far", state.RankSpore, "red", "coder")
	for _, c := range []struct {
		caller, target state.Spore
		want           bool
	}{
		{arch, a, true}, {arch, x, true}, {arch, lab, true}, {arch, far, true}, {arch, lead, true},
		{arch, arch, false},
		{lab, a, true}, {lab, b, true}, {lab, lead, true},
		{lab, x, false}, {lab, far, false}, {lab, arch, false}, {lab, lab, false},
		{lead, a, true},
		{lead, b, false}, {lead, x, false}, {lead, lab, false}, {lead, lead2, false}, {lead, lead, false},
		{lead2, x, true}, {lead2, a, false},
		{a, b, false}, {a, a, false}, {a, lab, false}, {a, x, false},
		// A [swarm] mycologist without a swarm reaches no one.
		{sp("s", "lab", state.RankSwarm, "", ""), b, false},
	} {
		require.Equal(t, c.want, Reaches(c.caller, c.target), "%s reaches %s", c.caller.ID, c.target.ID)
	}
}

func TestAboveAndTeammate(t *testing.T) {
	all := []state.Spore{
		sp("arch", "hq", state.RankArch, "", ""),
		sp("lab-myco", "lab", state.RankColony, "", ""),
		sp("a", "lab", state.RankSpore, "red", "coder"),
		sp("lead", "lab", state.RankSwarm, "red", "lead"),
		sp("solo", "nomyco", state.RankSpore, "", ""),
	}
	above := func(id string) string {
		for _, s := range all {
			if s.ID == id {
				to, err := Above(s, all)
				if err != nil {
					return "error: " + err.Error()
				}
				return to.ID
			}
		}
		return "?"
	}
	require.Equal(t, "lab-myco", above("a"))
	require.Equal(t, "lab-myco", above("lead"))
	require.Equal(t, "arch", above("lab-myco"))
	require.Equal(t, "arch", above("solo"))
	require.Contains(t, above("arch"), "no one above")

	to, err := Teammate(all[2], "lead", all)
	require.NoError(t, err)
	require.Equal(t, "lead", to.ID)
	_, err = Teammate(all[2], "coder", all)
	require.ErrorContains(t, err, "no other spore with role coder")
	_, err = Teammate(all[4], "coder", all)
	require.ErrorContains(t, err, "in no swarm")
}
