package reconcile

import (
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// SporeHealth is one spore as a pass saw it: its desired state from the
// snapshot, what was observed, and the effective health that follows.
// Its JSON is exactly `status -o json`'s documented shape (DESIGN
// "Commands"); the fields without a JSON name are for views and commands.
type SporeHealth struct {
	ID        string        `json:"id"`
	Colony    string        `json:"colony"`
	Rank      state.Rank    `json:"rank"`
	Swarm     string        `json:"-"`
	Role      string        `json:"-"`
	Desired   state.Desired `json:"desired"`
	Observed  Observed      `json:"observed"`
	Effective policy.Health `json:"effective"`
	// Reason is a sentence for a person; Code the reason's stable name
	// (docs/health.md lists them), "" when there is nothing to say.
	Reason string `json:"reason"`
	Code   Reason `json:"-"`
	// SleptBy says who put an asleep spore (desired Paused) to sleep:
	// "person" (a person or a mycologist's command), "idle", "budget";
	// "" when it is not wished asleep (docs/sleep.md).
	SleptBy string `json:"slept_by,omitempty"`
	// Spend is what the spore spent today (the UTC day) and Budget its
	// own daily budget, both only for a spore with a budget, its own or
	// its colony's (docs/budgets.md); OverBudget says which it reached
	// ("24/20 tokens today"), "" when within them. Spend is what budgets
	// judge: with the model gateway on, the gateway's count of the
	// spore's model calls, and ReportedSpend, beside it, what its agent
	// reported (its own account, never judged); in the direct mode Spend
	// is that report and ReportedSpend is absent.
	Spend         *state.Spend  `json:"spend,omitempty"`
	ReportedSpend *state.Spend  `json:"reported_spend,omitempty"`
	Budget        *state.Budget `json:"budget,omitempty"`
	OverBudget    string        `json:"over_budget,omitempty"`
	// LastSeq is the last event in the store's log after the pass's commit.
	LastSeq uint64 `json:"last_seq"`
	// Pending counts outbox entries not yet delivered; PendingSince is
	// when the oldest of them was queued (zero when none).
	Pending      int       `json:"-"`
	PendingSince time.Time `json:"-"`
	// Held counts those of them a budget holds back: all but the ones an
	// operator marked over-budget, when the spore reached a budget
	// (OverBudget); 0 within budget.
	Held int `json:"-"`
	// DeadLetters counts the entries its bridge refused for good, moved
	// out of the queue (docs/bridge.md "Delivery"); they stay until a
	// person drops them (`sporectl outbox drop`).
	DeadLetters int `json:"dead_letters,omitempty"`
	// NextSchedule is when the first of the scheduled prompts to the
	// spore is next due (schedule.go's NextRuns); nil: none is.
	NextSchedule *time.Time `json:"next_schedule,omitempty"`
	// Image and Created are the spore's spec image and creation time.
	Image   string    `json:"-"`
	Created time.Time `json:"-"`
}

// Result is what one pass saw and did, sorted by spore id.
type Result struct {
	Spores []SporeHealth `json:"spores"`
	// Orphans are ids of runtime objects marked as sporectl's with no
	// spore in the store (only when the pass covered the whole fleet).
	Orphans []string `json:"orphans,omitempty"`
}
