package reconcile

import (
	"context"
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// recordDecisions writes, in one read-write transaction before act, the
// wishes and messages the pass decided that act will carry out
// (docs/architecture.md "The pass"): its upkeep (the [arch] kept on, the
// `swarm loop` prompts due, the scheduled prompts due with their slots'
// claims: schedule.go), its idle sleeps, its budget's sleeps and
// wakes with their summons, and the summons of a spore whose agent's
// report and the gateway's count differ (usage.go). Each is redone on the record read again
// inside it, so an overlapping pass's or a person's newer write wins;
// the snapshot and the plans are then brought up to what was committed,
// so act starts, stops and delivers only what the store holds. No
// transaction is opened when nothing was decided.
//
// It is apart from the commit because these must be durable before act
// does them: a spore wished asleep before it is stopped, a loop prompt
// queued before it is delivered. A pass killed between this transaction
// and the commit leaves wishes and queued entries whose processes the
// next pass ends, starts or delivers; killed before it, nothing, and the
// next pass decides again.
func (ps *Pass) recordDecisions(ctx context.Context, snap *Snapshot, up []*upkept, slots []*slotted, plans []*SporePlan, in PlanInput) error {
	idle := plansWhere(plans, func(p *SporePlan) bool { return p.SleepIdle })
	budget := plansWhere(plans, func(p *SporePlan) bool { return p.SleepBudget || p.WakeBudget })
	usage, arch := usageToRaise(snap, plans, in)
	if len(up) == 0 && len(slots) == 0 && len(idle) == 0 && len(budget) == 0 && len(usage) == 0 {
		return nil
	}
	now := in.Now
	var slept, budgeted map[*SporePlan]state.Spore
	err := ps.Store.Update(ctx, func(tx state.Tx) error {
		// The settings first: PostgreSQL takes their lock before any
		// spore's.
		if err := claimSlots(ctx, tx, slots); err != nil {
			return err
		}
		if err := recordUpkeep(ctx, tx, snap, up, now); err != nil {
			return fmt.Errorf("record upkeep (the [arch] always on, swarm loops): %w", err)
		}
		var err error
		// An idle spore's sleep is a wish, recorded before act stops it.
		if slept, err = recordIdleSleeps(ctx, tx, idle, now); err != nil {
			return err
		}
		// So are a budget's sleeps and wakes, with their summons.
		if budgeted, err = recordBudget(ctx, tx, budget, now); err != nil {
			return err
		}
		// A spore's report and count apart: its summons, once a day.
		return ps.recordUsage(ctx, tx, usage, arch, now)
	})
	if err != nil {
		return err
	}
	applyUpkeep(snap, plans, up)
	ps.logSlots(slots)
	ps.applyIdleSleeps(idle, slept)
	ps.applyBudget(budget, budgeted, in)
	return nil
}
