package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// Admission and the budget, judged once per message, on the target's
// record as read in the transaction that records it (record.go). The
// rules are reconcile/policy's (Admit, Over); this file reads what they
// judge from tx.

// admit reports whether m may be recorded for sp (policy.Admit). The
// settings are read only when the rule turns on them.
func admit(ctx context.Context, tx state.Tx, sp state.Spore, m Message) (bool, error) {
	return policy.Admit(sp, m.Wake, func() (state.ColonySettings, error) {
		s, err := tx.Settings(ctx)
		if err != nil {
			return state.ColonySettings{}, fmt.Errorf("read settings: %w", err)
		}
		return s.Colony(sp.Colony), nil
	})
}

// OverBudgetNow says, inside tx, whether sp has reached its budget or its
// colony's today, in words ("" when not, or for the [arch]): policy.Over,
// the pass's judgement, on the record as stored and the spend the
// settings say budgets judge (the gateway's count, or the agent's report
// in the direct mode: policy.SpendOf). A message to such a spore is held
// (record); the page's prompt box shows it. The colony's spores are read
// only when its own budget is not reached and its colony has one.
func OverBudgetNow(ctx context.Context, tx state.Tx, sp state.Spore, now time.Time) (string, error) {
	if policy.AlwaysOn(sp) {
		return "", nil
	}
	settings, err := tx.Settings(ctx)
	if err != nil {
		return "", fmt.Errorf("read settings: %w", err)
	}
	own := policy.SpendOf(sp, settings, now, state.Spend{})
	if over, _, text := policy.Over(sp, own, state.Budget{}, state.Spend{}); over {
		return text, nil
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
	_, _, text := policy.Over(sp, own, b, policy.ColonySpends(all, settings, now)[sp.Colony])
	return text, nil
}
