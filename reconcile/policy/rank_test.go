package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

func TestRankRules(t *testing.T) {
	type rules struct{ IsArch, AlwaysOn, AlwaysOnRank, ReadsCluster bool }
	for _, c := range []struct {
		rank state.Rank
		want rules
	}{
		{state.RankArch, rules{true, true, true, true}},
		{state.RankColony, rules{}},
		{state.RankSwarm, rules{}},
		{state.RankSpore, rules{}},
	} {
		t.Run(string(c.rank), func(t *testing.T) {
			sp := state.Spore{Wish: state.Wish{ID: "a", Rank: c.rank}}
			got := rules{IsArch(c.rank), AlwaysOn(sp), AlwaysOnRank(c.rank), ReadsCluster(sp)}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("rank rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindMycologists(t *testing.T) {
	sp := func(id, colony string, r state.Rank) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony, Rank: r}}
	}
	for _, c := range []struct {
		name string
		all  []state.Spore
		want Mycologists
	}{
		{"none", []state.Spore{sp("a", "lab", state.RankSpore), sp("w", "lab", state.RankSwarm)}, Mycologists{Colony: map[string]string{}}},
		{"the [arch] and each colony's", []state.Spore{sp("hq", "ops", state.RankArch), sp("lm", "lab", state.RankColony), sp("om", "ops", state.RankColony), sp("a", "lab", state.RankSpore)},
			Mycologists{Arch: "hq", Colony: map[string]string{"lab": "lm", "ops": "om"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, FindMycologists(c.all)); diff != "" {
				t.Fatalf("FindMycologists (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAbove(t *testing.T) {
	sp := func(id, colony string, r state.Rank) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony, Rank: r}}
	}
	both := Mycologists{Arch: "hq", Colony: map[string]string{"lab": "lm"}}
	noArch := Mycologists{Colony: map[string]string{"lab": "lm"}}
	for _, c := range []struct {
		name       string
		sp         state.Spore
		m          Mycologists
		colonyWide bool
		want       string
	}{
		{"a spore: its colony mycologist", sp("a", "lab", state.RankSpore), both, false, "lm"},
		{"a [swarm] mycologist: its colony mycologist", sp("w", "lab", state.RankSwarm), both, false, "lm"},
		{"a colony without one: the [arch]", sp("b", "ops", state.RankSpore), both, false, "hq"},
		{"a [colony] mycologist: the [arch]", sp("lm", "lab", state.RankColony), both, false, "hq"},
		{"a colony's incident: the [arch]", sp("a", "lab", state.RankSpore), both, true, "hq"},
		{"the [arch]: no one", sp("hq", "lab", state.RankArch), both, false, ""},
		{"no [arch] to go to: no one", sp("lm", "lab", state.RankColony), noArch, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Above(c.sp, c.m, c.colonyWide)); diff != "" {
				t.Fatalf("Above (-want +got):\n%s", diff)
			}
		})
	}
}
