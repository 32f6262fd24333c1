package reconcile

import (
	"errors"
	"slices"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// AfterAct is the outcome's Result as the spores are after the pass
// acted, for `reconcile` to print and judge (docs/exit-codes.md): the
// Result shows each spore as it was observed, before act; here one the
// pass started is Starting, one it stopped is its desired Paused or
// Stopped, and one whose start the runtime refused is Dead with that
// reason. Beside each row, in the same order, what policy.NeedsAttention
// is asked of it. A dry run acted on nothing: its rows are as observed.
// The rows are the outcome's own until a row changes (then a copy): a
// pass that acted on nothing copies no fleet of rows to say so. They are
// for reading.
func (o *Outcome) AfterAct(dryRun bool) (Result, []policy.After) {
	r := Result{Spores: o.Spores, Orphans: o.Orphans}
	afters := make([]policy.After, len(r.Spores))
	copied := false
	for i := range r.Spores {
		if len(o.Plans) != len(r.Spores) {
			afters[i] = policy.After{Health: r.Spores[i].Effective}
			continue
		}
		h, changed, a := o.Plans[i].afterAct(r.Spores[i], dryRun)
		afters[i] = a
		if changed {
			if !copied {
				r.Spores, copied = slices.Clone(r.Spores), true
			}
			r.Spores[i] = h
		}
	}
	return r, afters
}

// afterAct is h, the plan's row of the Result, after act (AfterAct), and
// whether it is another than h.
func (p *SporePlan) afterAct(h SporeHealth, dryRun bool) (SporeHealth, bool, policy.After) {
	sp := p.Spore
	a := policy.After{
		NotBefore:  sp.NotBefore,
		NotStarted: !wasAlive(sp.Health, sp.HealthReason),
		ComingUp:   comingUp(p.Observed),
		Started:    sp.Health == policy.Starting,
	}
	if !p.Due.IsZero() {
		a.NotBefore = p.Due
	}
	changed := true
	switch {
	case dryRun:
		changed = false
	case p.OpenBreaker:
		// Error already (result): committed in this pass.
		changed = false
	case p.Start && p.StartErr == nil:
		h.Effective, h.Code = policy.Starting, ""
		switch {
		case p.Crash:
			h.Reason = "restarted after " + p.Verdict.Text
		case p.WakeBudget:
			h.Reason = "woken: within budget again, for what is queued"
		default:
			h.Reason = "started"
		}
	case p.Start && !errors.Is(p.StartErr, errWishChanged):
		h.Effective, h.Code = policy.Dead, ReasonStartFailed
		h.Reason = "start failed: " + p.StartErr.Error()
		a.StartFailed = true
	case p.Stop && p.StopErr == nil:
		v := Health(sp.Desired, Observed{Pod: PodAbsent}, sp.BreakerOpen)
		h.Effective, h.Code, h.Reason = v.Effective, v.Code, v.Text
		switch {
		case v.Effective == policy.Dead:
			// Woken while this pass stopped it: the next pass starts it.
			h.Code, h.Reason, a.NotStarted = ReasonNotStarted, "not started yet", true
		case p.SleepIdle:
			h.Reason = "asleep: " + idleText(p.Idle)
		case p.SleepBudget:
			h.Reason = "asleep: over budget (" + p.OverText + ")"
		case v.Text == "":
			_, h.Reason = sleptBy(sp, state.Settings{}, v, p.OverText)
		}
	default:
		changed = false
	}
	a.Health = h.Effective
	return h, changed, a
}

// comingUp reports whether o is of a spore on its way up: its pod
// pending or its old one going away, or running with a bridge that does
// not answer yet (but not one that broke its contract).
func comingUp(o Observed) bool {
	if o.Unknown || o.Damage != "" {
		return false
	}
	switch o.Pod {
	case PodPending, PodTerminating:
		return true
	case PodRunning:
		return o.Bridge != BridgeUp && o.BridgeProblem != ReasonContractBreach
	}
	return false
}
