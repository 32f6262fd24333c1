package mycelia

import (
	"net/http"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// Ranks and reach (docs/mycologists.md "Ranks and reach"). Everything here
// is a pure function of records read from the store, never of what a
// caller says.

// Reaches reports whether caller sees and steers target: target is of a
// lower rank and inside caller's scope. The [arch] mycologist's scope is
// the store, a [colony] mycologist's its colony, a [swarm] mycologist's
// its swarm (a swarm is named within its colony); a spore reaches no one.
func Reaches(caller, target state.Spore) bool { return reaches(&caller, &target) }

// reaches is Reaches for the loops over a fleet: a record is large, and
// copying two of them per spore was most of what a tell's address check
// cost.
func reaches(caller, target *state.Spore) bool {
	if caller.ID == target.ID || target.Rank.Level() >= caller.Rank.Level() {
		return false
	}
	switch caller.Rank {
	case state.RankArch:
		return true
	case state.RankColony:
		return target.Colony == caller.Colony
	case state.RankSwarm:
		return caller.Swarm != "" && target.Colony == caller.Colony && target.Swarm == caller.Swarm
	}
	return false
}

// InReach is every spore of all that caller reaches, in all's order.
func InReach(caller state.Spore, all []state.Spore) []state.Spore {
	var out []state.Spore
	for i := range all {
		if reaches(&caller, &all[i]) {
			out = append(out, all[i])
		}
	}
	return out
}

// Above is the mycologist a summons from caller goes to, one rank up
// (policy.Above): a spore's (or a [swarm] mycologist's) colony
// mycologist, else, when its colony has none, the [arch]; a [colony]
// mycologist's [arch]. The [arch] has no one above it.
func Above(caller state.Spore, all []state.Spore) (state.Spore, error) {
	id := policy.Above(caller, policy.FindMycologists(all), false)
	for i := range all {
		if id != "" && all[i].ID == id {
			return all[i], nil
		}
	}
	if policy.IsArch(caller.Rank) {
		return state.Spore{}, errorf(http.StatusForbidden, CodeForbidden, "the [arch] mycologist has no one above it to summon")
	}
	return state.Spore{}, errorf(http.StatusConflict, CodeNoMycologist, "there is no mycologist above %s: colony %s has no [colony] mycologist and the store no [arch]", caller.ID, caller.Colony)
}

// Teammate is the spore of caller's swarm with the role: same colony,
// same swarm, not caller itself.
func Teammate(caller state.Spore, role string, all []state.Spore) (state.Spore, error) {
	if caller.Swarm == "" {
		return state.Spore{}, errorf(http.StatusForbidden, CodeForbidden, "spore %s is in no swarm", caller.ID)
	}
	var found []state.Spore
	for _, s := range all {
		if s.ID != caller.ID && s.Colony == caller.Colony && s.Swarm == caller.Swarm && s.Role == role {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return state.Spore{}, errorf(http.StatusNotFound, CodeNotFound, "swarm %s has no other spore with role %s", caller.Swarm, role)
	case 1:
		return found[0], nil
	}
	return state.Spore{}, errorf(http.StatusConflict, CodeAmbiguousRole, "swarm %s has %d spores with role %s (%s, %s, …): give each its own role", caller.Swarm, len(found), role, found[0].ID, found[1].ID)
}

// outOfReach is the one answer for a spore the caller may not see,
// whether or not it exists, so that no caller learns of spores outside
// its reach.
func outOfReach(id string) *Error {
	return errorf(http.StatusForbidden, CodeForbidden, "spore %s is not in your reach", id)
}
