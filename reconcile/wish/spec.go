package wish

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Spec is what a declarative apply asks of an existing spore's wish
// beside its desired state (Set) and loop (SetLoop): its place in a swarm
// and what it runs with. Every field is the whole new value (the caller
// has kept what it does not manage).
type Spec struct {
	// Rank is the rank the caller believes the spore has; a rank is fixed
	// at create, so one that differs is refused.
	Rank  state.Rank
	Swarm string
	Role  string
	Spec  state.Spec
}

// SetSpec records c for spore id: when its swarm, role or spec differ, the
// wish with a new generation and a "configured" event naming each change
// ("swarm build → test, cpu 1 → 2"); nothing when they do not. A rank
// other than the stored one, a role without a swarm and a [swarm]
// mycologist without a swarm are *RefusedError; a move that takes a rank
// that must be single (a [swarm] mycologist into a swarm that has one)
// is state.ErrExists, as at create (checkRank). It returns the record as
// written and whether anything was. An id that does not exist is
// state.ErrNotFound.
func SetSpec(ctx context.Context, tx state.Tx, id string, c Spec, now time.Time) (state.Spore, bool, error) {
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	if c.Rank != sp.Rank {
		return sp, false, &RefusedError{Msg: fmt.Sprintf("rank: spore %s has rank %s, not %s: a rank is fixed when the spore is created (delete it and create it again to change it; nothing was changed)", id, sp.Rank, c.Rank)}
	}
	var changes []string
	for _, f := range []struct{ name, from, to string }{
		{"swarm", sp.Swarm, c.Swarm}, {"role", sp.Role, c.Role},
		{"image", sp.Spec.Image, c.Spec.Image}, {"cpu", sp.Spec.CPU, c.Spec.CPU},
		{"memory", sp.Spec.Memory, c.Spec.Memory}, {"storage", sp.Spec.Storage, c.Spec.Storage},
	} {
		if f.from != f.to {
			changes = append(changes, fmt.Sprintf("%s %s → %s", f.name, orNone(f.from), orNone(f.to)))
		}
	}
	if !sp.Spec.Pod.Equal(c.Spec.Pod) {
		changes = append(changes, fmt.Sprintf("pod options %s → %s", sp.Spec.Pod.Summary(), c.Spec.Pod.Summary()))
	}
	if len(changes) == 0 {
		return sp, false, nil
	}
	sp.Swarm, sp.Role, sp.Spec = c.Swarm, c.Role, c.Spec
	if sp.Role != "" && sp.Swarm == "" {
		return sp, false, &RefusedError{Msg: fmt.Sprintf("role: spore %s cannot have role %s without a swarm (nothing was changed)", id, sp.Role)}
	}
	if sp.Rank == state.RankSwarm && sp.Swarm == "" {
		return sp, false, &RefusedError{Msg: fmt.Sprintf("swarm: spore %s is a [swarm] mycologist, which orchestrates one swarm: it cannot leave its swarm (nothing was changed)", id)}
	}
	if err := checkRank(ctx, tx, sp); err != nil {
		return sp, false, err
	}
	bump(&sp, now)
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return sp, false, err
	}
	if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "configured", At: now, Text: strings.Join(changes, ", ")}}); err != nil {
		return sp, false, err
	}
	return sp, true, nil
}

// orNone shows an empty value in an event's text.
func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
