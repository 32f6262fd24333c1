package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// Budgets (docs/budgets.md): a spore's own daily budget, and its
// colony's over all the colony's spores, over the UTC day of the pass,
// counted by the model gateway (state.GatewayRecord) or, in the direct
// mode, from the usage its agent reports (state.Spore.Activity, by hour):
// policy.SpendOf says which. A spore that reached either gets no delivery but what an
// operator marked over-budget (its entries stay queued); once its turn
// ends it is put to sleep by "budget" (wish.SleepBy), in the pass's one
// transaction between plan and act (decided.go), which also summons its
// colony mycologist (or the [arch]) once a day; once within budget again
// (a new day, a raised budget) with something queued, it is woken
// (wish.WakeAfterBudget). What a spore spent and whether that reached a
// budget are policy's (policy.CountSpends, policy.Over): the [arch]
// mycologist is always on, no budget holds it back, though its spend
// counts in its colony's.

// countSpends counts the spends the plan judges budgets on
// (policy.CountSpends): snap's spores, its colonies over every spore of
// the store, and this pass's ingested lines, which the commit adds to the
// record.
func countSpends(snap *Snapshot, got map[string]*ingested, now time.Time) policy.Spends {
	return policy.CountSpends(snap.Spores, snap.All, snap.Settings, now, func(id string) state.Spend {
		return got[id].spend()
	})
}

// spend is what in's lines report was spent, not in the spore's record
// until the commit adds them. The commit counts every line in the hour
// of this pass (addActivity), whatever its bridge stamped it: today's.
func (in *ingested) spend() state.Spend {
	var s state.Spend
	if in == nil {
		return s
	}
	for _, c := range in.counts {
		s = s.Add(state.Spend{Tokens: state.AddCount(c.in, c.out), CostMicros: c.cost})
	}
	return s
}

// overBudget is policy.Over for sp on the plan's spends.
func overBudget(sp state.Spore, in PlanInput) (bool, bool, string) {
	return policy.Over(sp, in.Spends.Spore[sp.ID], in.Settings.Colony(sp.Colony).Budget, in.Spends.Colony[sp.Colony])
}

// planBudget decides what p's budget holds: over it, a healthy spore
// wished awake whose turn has ended (its bridge idle, nothing in its
// queue, nothing marked over-budget to deliver) is put to sleep by
// budget, instead of any idle sleep; within it, one a budget put to
// sleep that has something queued is woken.
func planBudget(p *SporePlan, in PlanInput) {
	sp := p.Spore
	switch {
	case p.OverBudget && sp.Desired == state.Running:
		if p.Verdict.Effective != policy.Healthy || p.Start || p.Stop || in.Force[sp.ID] ||
			p.Observed.Activity != bridge.StateIdle || p.Observed.Queue > 0 || len(policy.Deliverable(in.Pending[sp.ID], true)) > 0 {
			return
		}
		p.SleepBudget, p.SleepIdle = true, false
	case !p.OverBudget && sp.Desired == state.Paused && sp.DesiredBy == state.ByBudget && len(in.Pending[sp.ID]) > 0:
		p.WakeBudget = true
	}
}

// held counts the entries of pending a budget holds back from a spore
// (over: it reached one): those policy.Deliverable does not give it. A
// pass never delivers them, so they are all still queued after it.
func held(pending []state.OutboxEntry, over bool) int {
	return len(pending) - len(policy.Deliverable(pending, over))
}

// BudgetKey is the incident key of a spore's budget summons on day:
// once per spore per UTC day; ColonyBudgetKey a colony's.
func BudgetKey(id string, day time.Time) string {
	return "budget:" + id + ":" + day.Format(time.DateOnly)
}

// ColonyBudgetKey is the incident key of colony's budget summons on day.
func ColonyBudgetKey(colony string, day time.Time) string {
	return "budget:colony:" + colony + ":" + day.Format(time.DateOnly)
}

// recordBudget records, inside tx, the sleep of every spore of todo the
// plan put to sleep by budget and the wake of every one it woke, each
// re-read first (one whose generation moved since the snapshot is left
// alone), and the summons of each sleep. applyBudget then makes each
// slept spore's plan stop it, each woken one's start it.
func recordBudget(ctx context.Context, tx state.Tx, todo []*SporePlan, now time.Time) (map[*SporePlan]state.Spore, error) {
	done, written, err := wishAsRead(ctx, tx, todo, func(tx state.Tx, p *SporePlan) (state.Spore, bool, error) {
		if p.SleepBudget {
			return wish.SleepBy(ctx, tx, p.Spore.ID, state.ByBudget, ": over budget ("+p.OverText+")", now)
		}
		return wish.WakeAfterBudget(ctx, tx, p.Spore.ID, ": within budget again, to deliver what is queued", now)
	})
	if err == nil {
		err = budgetSummons(ctx, tx, plansWhere(written, func(p *SporePlan) bool { return p.SleepBudget }), now)
	}
	if err != nil {
		return nil, fmt.Errorf("record budget sleeps and wakes: %w", err)
	}
	return done, nil
}

// applyBudget brings the plans of todo up to what recordBudget
// committed.
func (ps *Pass) applyBudget(todo []*SporePlan, done map[*SporePlan]state.Spore, in PlanInput) {
	for _, p := range todo {
		sp, ok := done[p]
		if !ok {
			p.SleepBudget, p.WakeBudget = false, false
			continue
		}
		p.Spore = sp
		p.Verdict = Health(sp.Desired, p.Observed, sp.BreakerOpen)
		if p.SleepBudget {
			ps.logger().Info("budget: put to sleep", "spore", sp.ID, "spend", p.OverText)
			p.Stop, p.Deliver = true, nil
			continue
		}
		ps.logger().Info("budget: woken", "spore", sp.ID)
		heal(p, in)
	}
}

// budgetSummons summons, inside tx, the mycologist of each spore slept
// by budget: its colony mycologist for its own budget (the [arch] when
// the colony has none), the [arch] for its colony's; once per spore (or
// colony) per UTC day.
func budgetSummons(ctx context.Context, tx state.Tx, slept []*SporePlan, now time.Time) error {
	if len(slept) == 0 {
		return nil
	}
	myc, err := readMycologists(ctx, tx)
	if err != nil {
		return err
	}
	day := state.Day(now)
	var out summonses
	for _, p := range slept {
		sp := p.Spore
		s := Summons{Key: BudgetKey(sp.ID, day), By: sp.ID, Text: fmt.Sprintf(
			"Budget: spore %s reached its daily budget (%s) and was put to sleep when its turn ended; what is sent to it stays queued until the next UTC day or a raised budget, which wake it. Look: `mycologist spore %s`. No answer is expected.",
			sp.ID, p.OverText, sp.ID)}
		if p.OverColony {
			s = Summons{Key: ColonyBudgetKey(sp.Colony, day), Text: fmt.Sprintf(
				"Budget: colony %s reached its daily budget (%s); its spores get nothing new and are put to sleep as their turns end, until the next UTC day or a raised budget. No answer is expected.",
				sp.Colony, p.OverText)}
		}
		out.add(policy.Above(sp, myc, p.OverColony), s)
	}
	return out.send(ctx, tx, now)
}
