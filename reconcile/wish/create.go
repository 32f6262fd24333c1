package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// New is what a person chooses for a new spore; the rest of its record is
// the rules'.
type New struct {
	ID     string
	Colony string
	Rank   state.Rank
	Swarm  string
	Role   string
	// Spec's empty fields take the store's defaults.
	Spec state.Spec
	// SleepAfter is the idle time after which it is put to sleep (0:
	// its colony's); refused on the [arch].
	SleepAfter time.Duration
	// Budget is its daily budget (zero: none of its own); refused on
	// the [arch].
	Budget state.Budget
}

// Create records a new spore, asleep (desired Paused, and known to be, so
// the first pass has no news), with the store's defaults for what its
// spec leaves empty and a "created" event. Its rank must be free (see
// CheckRank): a taken one is state.ErrExists, a [swarm] mycologist
// without a swarm *RefusedError; an id in use is state.ErrExists. It
// returns the record as written; waking it is Wake's.
func Create(ctx context.Context, tx state.Tx, n New, now time.Time) (state.Spore, error) {
	created, err := CreateMany(ctx, tx, []New{n}, now)
	if err != nil {
		return state.Spore{}, err
	}
	return created[0], nil
}

// CreateMany is Create of each of news in turn, in tx: the settings are
// read once, and the stored spores once, only when one of news has a
// rank that must be single; each is checked against those and the ones
// created before it, so two [arch] among news are refused as an [arch]
// and a second one would be. On an error the caller's transaction must
// not commit (some of news may be written in it).
func CreateMany(ctx context.Context, tx state.Tx, news []New, now time.Time) ([]state.Spore, error) {
	settings, err := tx.Settings(ctx)
	if err != nil {
		return nil, err
	}
	var all []state.Spore // the rivals, once read
	loaded := false
	created := make([]state.Spore, 0, len(news))
	for _, n := range news {
		sp := state.Spore{
			Wish: state.Wish{ID: n.ID, Colony: n.Colony, Rank: n.Rank, Swarm: n.Swarm, Role: n.Role, Desired: state.Paused, Spec: n.Spec.WithDefaults(settings), Created: now, Updated: now,
				SleepAfter: state.Duration(n.SleepAfter), Budget: n.Budget},
			Status: state.Status{HealthRecord: state.HealthRecord{Health: policy.Paused}},
		}
		if policy.AlwaysOn(sp) && n.SleepAfter != 0 {
			return nil, &RefusedError{Msg: fmt.Sprintf("create %s: the [arch] mycologist is always on: --sleep-after cannot be set on it (nothing was created)", sp.ID)}
		}
		if policy.AlwaysOn(sp) && !n.Budget.IsZero() {
			return nil, &RefusedError{Msg: fmt.Sprintf("create %s: the [arch] mycologist is always on: no budget can be set on it (nothing was created)", sp.ID)}
		}
		if singleRank(sp.Rank) {
			if !loaded {
				// Read in tx, so it holds the spores of news created
				// before this one.
				if all, err = tx.Spores(ctx); err != nil {
					return nil, err
				}
				loaded = true
			}
			if err := CheckRank(sp, all); err != nil {
				return nil, err
			}
		}
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return nil, err
		}
		if _, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindLifecycle, Action: "created", At: now,
			Text: fmt.Sprintf("colony %s, rank %s, desired %s", sp.Colony, sp.Rank, sp.Desired)}}); err != nil {
			return nil, err
		}
		if loaded {
			all = append(all, sp)
		}
		created = append(created, sp)
	}
	return created, nil
}

// checkRank keeps the ranks that must be single (CheckRank) against the
// spores of tx.
func checkRank(ctx context.Context, tx state.Tx, sp state.Spore) error {
	if !singleRank(sp.Rank) {
		return nil
	}
	all, err := tx.Spores(ctx)
	if err != nil {
		return err
	}
	return CheckRank(sp, all)
}

// singleRank says whether rank r must be single in its scope (CheckRank).
func singleRank(r state.Rank) bool {
	return policy.IsArch(r) || r == state.RankColony || r == state.RankSwarm
}

// CheckRank keeps the ranks that must be single: one arch among all, one
// colony mycologist per colony, one [swarm] mycologist per swarm (a
// swarm is named within its colony), which must have a swarm (else
// *RefusedError). sp itself, when all holds it (a change of a stored
// spore), is no rival of its own. A taken rank is state.ErrExists. It is
// pure, so that a plan of many changes (apply's) can check the spores it
// would leave before it writes any.
func CheckRank(sp state.Spore, all []state.Spore) error {
	switch {
	case !singleRank(sp.Rank):
		return nil
	case sp.Rank == state.RankSwarm && sp.Swarm == "":
		return &RefusedError{Msg: "--rank swarm needs --swarm: a [swarm] mycologist orchestrates one swarm"}
	}
	for _, o := range all {
		switch {
		case o.ID == sp.ID:
		case policy.IsArch(sp.Rank) && policy.IsArch(o.Rank):
			return fmt.Errorf("spore %s is already the arch mycologist; there is one per store: %w", o.ID, state.ErrExists)
		case sp.Rank == state.RankColony && o.Rank == state.RankColony && o.Colony == sp.Colony:
			return fmt.Errorf("spore %s is already colony %s's mycologist: %w", o.ID, sp.Colony, state.ErrExists)
		case sp.Rank == state.RankSwarm && o.Rank == state.RankSwarm && o.Colony == sp.Colony && o.Swarm == sp.Swarm:
			return fmt.Errorf("spore %s is already the [swarm] mycologist of swarm %s in colony %s: %w", o.ID, sp.Swarm, sp.Colony, state.ErrExists)
		}
	}
	return nil
}

// Delete removes spore id from the store with its event log, outbox and
// token; its processes and home are the runtime's to end afterwards (so
// a wake racing the delete finds the spore gone before it starts). An id
// that does not exist is state.ErrNotFound.
func Delete(ctx context.Context, tx state.Tx, id string) error {
	return tx.DeleteSpore(ctx, id)
}
