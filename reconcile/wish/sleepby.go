package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// IdleFrom is the sender of the sleep that idle records.
const IdleFrom = "sporectl:idle"

// SleepBy records that spore id is put to sleep by one of the store's
// own rules (by: state.ByIdle, later state.ByBudget), not by a person:
// desired Paused with DesiredBy by, a new generation, and a "sleep" event
// from "sporectl:"+by whose text ends with why (": idle for 30m"). A
// spore not wished awake is left alone (a person's sleep or stop comes
// first), and so is the [arch] mycologist, which is always on. It
// returns the record as written, or as found, and whether it wrote. An
// id that does not exist is state.ErrNotFound.
func SleepBy(ctx context.Context, tx state.Tx, id string, by state.DesiredBy, why string, now time.Time) (state.Spore, bool, error) {
	if by == state.ByPerson || !by.Valid() {
		return state.Spore{}, false, fmt.Errorf("record a sleep of %s by %q: not a rule's name (a person's sleep is Sleep)", id, by)
	}
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	if sp.Desired != state.Running || policy.AlwaysOn(sp) {
		return sp, false, nil
	}
	sp, _, err = desireBy(ctx, tx, sp, state.Paused, by, "sleep", "sporectl:"+string(by), why, now)
	return sp, err == nil, err
}
