package mycelia

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestIdentityNamesTheSporeAndOnlyItsCommands(t *testing.T) {
	worker := Identity(state.Spore{Wish: state.Wish{ID: "w-1", Rank: state.RankSpore, Colony: "lab", Swarm: "red", Role: "tester"}})
	require.Contains(t, worker, "You are spore w-1, a spore, in colony lab, swarm red (role tester)")
	require.Contains(t, worker, "mycologist ask")
	require.Contains(t, worker, "swarm tell ROLE")
	require.NotContains(t, worker, "mycologist tell", "a plain spore steers no one")
	require.NotContains(t, worker, "swarm compact")

	colony := Identity(state.Spore{Wish: state.Wish{ID: "lab-myco", Rank: state.RankColony, Colony: "lab"}})
	require.Contains(t, colony, "the [colony] mycologist of colony lab")
	require.Contains(t, colony, "mycologist tell ID")
	require.NotContains(t, colony, "swarm tell")

	arch := Identity(state.Spore{Wish: state.Wish{ID: "arch", Rank: state.RankArch, Colony: "hq"}})
	require.NotContains(t, arch, "mycologist ask", "the arch has no one to summon")
	swarm := Identity(state.Spore{Wish: state.Wish{ID: "s", Rank: state.RankSwarm, Colony: "lab", Swarm: "red"}})
	require.Contains(t, swarm, "swarm compact ROLE")
	require.False(t, strings.ContainsAny(worker+colony+arch+swarm, "\x00\r"))
}
