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

// Idle sleep (docs/sleep.md): a healing pass puts an awake spore to
// sleep once it has been idle for its SleepAfter (its own, else its
// colony's), freeing its pod. The rule is policy's (policy.SleepIdle),
// asked by the plan (sleepIdle); the pass records the sleep as a wish
// (wish.SleepBy, DesiredBy "idle") in its one transaction before it acts
// (recordIdleSleeps, decided.go), so a pass killed between the two
// leaves a spore wished asleep whose processes the next pass ends (runs
// while asleep), never one wished awake with nothing running. Then act
// stops it like any spore that runs while asleep.

// sleepIdle decides whether p's spore is put to sleep for being idle
// (policy.SleepIdle): what holds it awake is the plan's view of it now —
// not healthy, being started or stopped, a turn running or something
// queued (the bridge not idle, its queue or its outbox not empty, lines
// taken from it by this pass), or just woken by a person (in.Force).
func sleepIdle(p *SporePlan, in PlanInput) {
	sp := p.Spore
	busy := p.Verdict.Effective != policy.Healthy || p.Start || p.Stop ||
		p.Observed.Activity != bridge.StateIdle || p.Observed.Queue > 0 || len(in.Pending[sp.ID]) > 0 ||
		in.Active[sp.ID] || in.Force[sp.ID]
	p.SleepIdle, p.Idle = policy.SleepIdle(sp, in.Settings, busy, in.Now)
}

// idleText is the why of an idle sleep's event and stop: "idle for 30m".
func idleText(idle time.Duration) string {
	return "idle for " + idle.Truncate(time.Second).String()
}

// recordIdleSleeps records, inside tx, the sleep of every spore the plan
// found idle long enough (wish.SleepBy, by idle), each re-read first: one
// whose generation moved since the snapshot (a person acted, another
// pass slept it) is left alone and not stopped. applyIdleSleeps then
// makes each slept spore's plan stop it, on the record as written.
func recordIdleSleeps(ctx context.Context, tx state.Tx, todo []*SporePlan, now time.Time) (map[*SporePlan]state.Spore, error) {
	slept, _, err := wishAsRead(ctx, tx, todo, func(tx state.Tx, p *SporePlan) (state.Spore, bool, error) {
		return wish.SleepBy(ctx, tx, p.Spore.ID, state.ByIdle, ": "+idleText(p.Idle), now)
	})
	if err != nil {
		return nil, fmt.Errorf("record idle sleeps: %w", err)
	}
	return slept, nil
}

// applyIdleSleeps brings the plans of todo up to what recordIdleSleeps
// committed: a slept spore is stopped, one left alone is not.
func (ps *Pass) applyIdleSleeps(todo []*SporePlan, slept map[*SporePlan]state.Spore) {
	for _, p := range todo {
		sp, ok := slept[p]
		if !ok {
			p.SleepIdle = false
			continue
		}
		ps.logger().Info("idle: put to sleep", "spore", sp.ID, "idle", p.Idle.Truncate(time.Second))
		p.Spore, p.Stop, p.Deliver = sp, true, nil
		p.Verdict = Health(sp.Desired, p.Observed, sp.BreakerOpen)
	}
}

// sleptBy is who put sp to sleep, for status ("person", "idle",
// "budget"; "" unless desired Paused), and the reason status shows: v's
// own when it has one, else, asleep as wished, why it sleeps ("asleep:
// idle for 30m", "asleep: by a person", "asleep: over budget (24/20
// tokens today)"); over is what budget it is over, if any.
func sleptBy(sp state.Spore, s state.Settings, v Verdict, over string) (string, string) {
	if sp.Desired != state.Paused {
		return "", v.Text
	}
	by := string(sp.DesiredBy)
	if sp.DesiredBy == state.ByPerson {
		by = "person"
	}
	if v.Text != "" || v.Effective != policy.Paused {
		return by, v.Text
	}
	switch after := policy.SleepAfter(sp, s); {
	case sp.DesiredBy == state.ByIdle && after > 0:
		return by, "asleep: " + idleText(after)
	case sp.DesiredBy == state.ByPerson:
		return by, "asleep: by a person"
	case sp.DesiredBy == state.ByBudget && over != "":
		return by, "asleep: over budget (" + over + ")"
	case sp.DesiredBy == state.ByBudget:
		return by, "asleep: by budget, within it again (the next message wakes it)"
	}
	return by, "asleep: by " + by
}
