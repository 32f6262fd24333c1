package policy

import "github.com/sporectl/sporectl/state"

// Ranks (docs/mycologists.md "Ranks and reach"). Their grammar is
// state's (state.Rank); which rank may call which route is mycelia's
// (routes.go), and whom a mycologist reaches is mycelia's too (reach.go).
// What each rank is owed is here.

// IsArch reports whether r is the [arch] mycologist's rank: the one
// place that compares a rank with it (the rules below ask it).
func IsArch(r state.Rank) bool { return r == state.RankArch }

// AlwaysOn reports whether sp is always on and never budget-limited: the
// [arch] mycologist. It cannot be put to sleep or stopped, by a person,
// idle or a budget; it has no sleep-after and no budget of its own; a
// healing pass wakes it when it finds it asleep.
func AlwaysOn(sp state.Spore) bool { return IsArch(sp.Rank) }

// AlwaysOnRank is AlwaysOn for a spore of rank r not written yet
// (create's flags, apply's plan).
func AlwaysOnRank(r state.Rank) bool { return IsArch(r) }

// ReadsCluster reports whether sp's pod may read the Kubernetes API with
// an account of its own: the [arch] alone (docs/runtimes.md); every other
// spore talks only to serve.
func ReadsCluster(sp state.Spore) bool { return IsArch(sp.Rank) }

// Mycologists are the store's mycologists that summonses go to, by id:
// the [arch] and each colony's [colony] mycologist.
type Mycologists struct {
	Arch   string
	Colony map[string]string // by colony
}

// FindMycologists finds them among all (every spore of the store; create
// keeps one of each).
func FindMycologists(all []state.Spore) Mycologists {
	m := Mycologists{Colony: map[string]string{}}
	for i := range all {
		sp := &all[i]
		switch {
		case IsArch(sp.Rank):
			m.Arch = sp.ID
		case sp.Rank == state.RankColony:
			m.Colony[sp.Colony] = sp.ID
		}
	}
	return m
}

// Above is the mycologist one rank up from sp, whom its summons and its
// incidents go to: a spore's (or a [swarm] mycologist's) colony
// mycologist, else, when its colony has none, the [arch]; a [colony]
// mycologist's [arch]. colonyWide: the incident is its colony's (a
// colony's budget), which only the [arch] hears of. "" when there is no
// one: the [arch] has no one above it, and a store may have no [arch].
func Above(sp state.Spore, m Mycologists, colonyWide bool) string {
	if IsArch(sp.Rank) {
		return ""
	}
	if c := m.Colony[sp.Colony]; !colonyWide && c != "" && c != sp.ID {
		return c
	}
	return m.Arch
}
