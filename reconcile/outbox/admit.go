package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Admission and the budget, judged once per message, on the target's
// record as read in the transaction that records it (record.go).

// admit reports whether m may be recorded for sp: sp is wished awake, or
// a budget put it to sleep (it takes every message and is woken once
// within budget, docs/budgets.md); or m asks to wake it (--wake); or idle
// put it to sleep and its colony's WakeOnMessage lets any message wake
// such a spore (docs/sleep.md). A spore a person put to sleep or stopped
// is woken only on request. Settings are read only for that last case.
func admit(ctx context.Context, tx state.Tx, sp state.Spore, m Message) (bool, error) {
	switch {
	case sp.Desired == state.Running, sp.Desired == state.Paused && sp.DesiredBy == state.ByBudget:
		return true, nil
	case m.Wake:
		return true, nil
	case sp.Desired != state.Paused || sp.DesiredBy != state.ByIdle:
		return false, nil
	}
	s, err := tx.Settings(ctx)
	if err != nil {
		return false, fmt.Errorf("read settings: %w", err)
	}
	return s.Colony(sp.Colony).WakeOnMessage, nil
}

// OverBudgetNow says, inside tx, whether sp has reached its budget or its
// colony's today, in words ("" when not, or for the [arch]): the same
// judgement as a pass's (reconcile's overBudget), on the record as
// stored. A message to such a spore is held (record); the page's prompt
// box shows it.
func OverBudgetNow(ctx context.Context, tx state.Tx, sp state.Spore, now time.Time) (string, error) {
	if sp.Rank == state.RankArch {
		return "", nil
	}
	if s := state.SpendOn(sp.Activity, now); s.Reaches(sp.Budget) {
		return spendText(s, sp.Budget), nil
	}
	settings, err := tx.Settings(ctx)
	if err != nil {
		return "", fmt.Errorf("read settings: %w", err)
	}
	b := settings.Colony(sp.Colony).Budget
	if b.IsZero() {
		return "", nil
	}
	all, err := tx.Spores(ctx)
	// A damaged member's spend is unknown: the colony is judged on the
	// rest, as the pass judges it (one spore's damage is its own).
	if _, err = state.Damaged(err); err != nil {
		return "", fmt.Errorf("count colony %s's spend: %w", sp.Colony, err)
	}
	var s state.Spend
	for _, o := range all {
		if o.Colony == sp.Colony {
			s = s.Add(state.SpendOn(o.Activity, now))
		}
	}
	if s.Reaches(b) {
		return "colony " + sp.Colony + ": " + spendText(s, b), nil
	}
	return "", nil
}

// spendText is the limit s reached of b: "24/20 tokens today",
// "$2.10/$2.00 today" — the words of reconcile's budget.go, which this
// package may not import; both go where the budget's judgement goes.
func spendText(s state.Spend, b state.Budget) string {
	if b.TokensPerDay > 0 && s.Tokens >= b.TokensPerDay {
		return fmt.Sprintf("%d/%d tokens today", s.Tokens, b.TokensPerDay)
	}
	return fmt.Sprintf("%s/%s today", state.CostText(s.CostMicros), state.CostText(b.CostPerDayMicros))
}
