package wish

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// BudgetFrom is the sender of the sleeps and wakes that budgets record.
const BudgetFrom = "sporectl:budget"

// SetBudget records spore id's daily budget (docs/budgets.md), as
// `sporectl set budget`, `create --budget-tokens/--budget-cost` or an
// applied manifest asks it, by from: a new generation and a "budget"
// event. The zero budget removes the spore's own (its colony's may still
// hold). The same budget again writes nothing. It returns the spore as
// written and whether anything was. An id that does not exist is
// state.ErrNotFound; a negative limit is *state.InvalidError; the [arch]
// mycologist, which is always on, is refused with *RefusedError.
func SetBudget(ctx context.Context, tx state.Tx, id string, b state.Budget, from string, now time.Time) (state.Spore, bool, error) {
	if err := state.ValidateBudget("budget", b); err != nil {
		return state.Spore{}, false, err
	}
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	if sp.Budget == b {
		return sp, false, nil
	}
	if policy.AlwaysOn(sp) {
		return sp, false, &RefusedError{Msg: fmt.Sprintf("set budget %s: spore %s is the [arch] mycologist, which is always on: no budget holds it back (nothing was changed)", id, id)}
	}
	sp.Budget = b
	bump(&sp, now)
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return sp, false, err
	}
	if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "budget", From: from, At: now, Text: BudgetText(b)}}); err != nil {
		return sp, false, err
	}
	return sp, true, nil
}

// BudgetText says b in words: "budget 20 tokens and $2.50 a day", "no
// budget of its own".
func BudgetText(b state.Budget) string {
	var parts []string
	if b.TokensPerDay > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.TokensPerDay))
	}
	if b.CostPerDayMicros > 0 {
		parts = append(parts, state.CostText(b.CostPerDayMicros))
	}
	if len(parts) == 0 {
		return "no budget of its own"
	}
	return "budget " + strings.Join(parts, " and ") + " a day"
}

// WakeAfterBudget wakes spore id, which a budget put to sleep, now that
// it is within its budget again (a new UTC day, a raised budget) and has
// something queued: desired Running, DesiredBy cleared, a new generation
// and a "wake" event from BudgetFrom saying why. A spore anyone else put
// to sleep, or one wished awake, is left alone. It returns the record as
// written, or as found, and whether it wrote.
func WakeAfterBudget(ctx context.Context, tx state.Tx, id, why string, now time.Time) (state.Spore, bool, error) {
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	if sp.Desired != state.Paused || sp.DesiredBy != state.ByBudget {
		return sp, false, nil
	}
	sp, _, err = desire(ctx, tx, sp, state.Running, "wake", BudgetFrom, why, now)
	return sp, err == nil, err
}
