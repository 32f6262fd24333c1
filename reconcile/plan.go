package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// PlanInput is everything plan decides from. It is data only: plan reads
// no clock and does no I/O.
type PlanInput struct {
	Now      time.Time
	Policy   state.RecoveryPolicy // with defaults filled
	Spores   []state.Spore
	Observed map[string]Observed
	Pending  map[string][]state.OutboxEntry
	// Heal: start dead spores, stop what runs while it should not.
	Heal bool
	// Deliver: post pending outbox entries to bridges that are up.
	Deliver bool
	// Force names spores a person just woke: started now, whatever the
	// backoff timer says (the breaker still holds).
	Force map[string]bool
	// Settings are the store's: the colonies' idle-sleep defaults.
	Settings state.Settings
	// Active names spores this pass took lines from: not idle.
	Active map[string]bool
	// Spends are today's spends against budgets (budget.go).
	Spends policy.Spends
	// Unreadable names spores whose record could not be read (their
	// Observed.Damage says where): nothing of them is written.
	Unreadable map[string]*state.CorruptError
}

// SporePlan is what a pass decided for one spore, and later what came of
// it (the act fields).
type SporePlan struct {
	Spore    state.Spore // as in the snapshot
	Observed Observed
	Verdict  Verdict
	// Unreadable: the spore's record could not be read (Spore is its id
	// alone); the commit writes nothing of it.
	Unreadable bool

	Start         bool        // start it (on the same home)
	Crash         bool        // the start is a respawn after a crash: counted
	Stop          bool        // end its processes (it runs while it should not)
	OpenBreaker   bool        // too many crashes inside the window: open it
	Failures      []time.Time // the crash times to keep, when Crash or OpenBreaker
	NotBefore     time.Time   // the next respawn's earliest time, when Crash
	ClearFailures bool        // a long healthy stretch: forget old crashes
	// Due is when a respawn that waits for its backoff becomes due.
	Due time.Time
	// Deliver are the outbox entries to post now, in queue order.
	Deliver []state.OutboxEntry
	// SleepIdle: idle for Idle, at least its SleepAfter; the pass records
	// its sleep (by idle) and then stops it (idle.go).
	SleepIdle bool
	Idle      time.Duration
	// OverBudget: it reached its own budget or (OverColony) its colony's,
	// as OverText says; it is given only entries marked over-budget.
	// SleepBudget: over budget with its turn ended, the pass records its
	// sleep (by budget) and then stops it; WakeBudget: a budget put it to
	// sleep and it is within budget again with something queued, the pass
	// records its wake and starts it (budget.go).
	OverBudget, OverColony  bool
	OverText                string
	SleepBudget, WakeBudget bool

	// Filled by act.
	StartErr  error
	StopErr   error
	Delivered []Delivery
	// Filled by ingest.
	Ingest *ingested
	// issued are the credentials offered to the start, if any.
	issued *issued
	// recovery is the recovery policy the plan used (for the restart
	// event's words).
	recovery state.RecoveryPolicy
}

// Delivery is one outbox entry posted to a bridge.
type Delivery struct {
	Entry     state.OutboxEntry
	Position  int  // the bridge's queue position (0: running or next)
	Duplicate bool // the bridge had it already: an earlier pass delivered it
	Err       error
	// Dead, with Err, is the reason the bridge refused the entry for good
	// (undeliverable): the commit makes it a dead letter.
	Dead string
}

// Plan decides, for every spore, its effective health and what to do.
// It is a pure function.
func Plan(in PlanInput) []*SporePlan {
	// One allocation for the fleet's plans: a pass over 10,000 sleeping
	// spores is mostly this loop.
	plans := make([]SporePlan, len(in.Spores))
	out := make([]*SporePlan, len(in.Spores))
	for i := range in.Spores {
		out[i] = &plans[i]
		planSpore(out[i], &in.Spores[i], in.Observed[in.Spores[i].ID], in)
	}
	return out
}

// planSpore is Plan's decision for one spore, sp observed as o, into p
// (zero): a pass that streams the fleet (stream.go) plans each spore as
// it reads it. in.Spores is not read.
func planSpore(p *SporePlan, sp *state.Spore, o Observed, in PlanInput) {
	// Copied once, into the plan: a record is large (its activity, the
	// gateway's count), and a range variable would copy it again.
	p.Spore, p.Observed, p.recovery = *sp, o, in.Policy
	sp = &p.Spore
	p.Verdict = Health(sp.Desired, p.Observed, sp.BreakerOpen)
	if p.Observed.Damage != "" {
		// Quarantined: shown, never acted on (its record may be all that
		// is damaged, or what it holds may be wrong).
		_, p.Unreadable = in.Unreadable[sp.ID]
		return
	}
	p.OverBudget, p.OverColony, p.OverText = overBudget(*sp, in)
	if in.Heal {
		heal(p, in)
		sleepIdle(p, in)
		planBudget(p, in)
	}
	if p.Verdict.Effective == policy.Healthy && policy.ForgetFailures(sp.Failures, in.Policy, in.Now) {
		p.ClearFailures = true
	}
	if in.Deliver && !p.Start && !p.Stop && !p.SleepIdle && !p.SleepBudget && p.Observed.Bridge == BridgeUp && p.Observed.BridgeProblem != ReasonBridgeUnhealthy {
		p.Deliver = policy.Deliverable(in.Pending[sp.ID], p.OverBudget)
	}
}

func heal(p *SporePlan, in PlanInput) {
	sp := p.Spore
	asleepButThere := sp.Desired != state.Running && podThere(p.Observed)
	switch {
	case sp.BreakerOpen && asleepButThere:
		// Error shows above all, but a spore put to sleep is still ended:
		// the breaker holds back starts, never a stop.
		p.Stop = true
	case p.Verdict.Effective == policy.Dead:
		if !wasAlive(sp.Health, sp.HealthReason) {
			// Woken, created awake, or after reset: a first start.
			p.Start = true
			return
		}
		// A crash: recovery decides (backoff, breaker).
		r := policy.AfterCrash(sp.Failures, sp.NotBefore, in.Policy, in.Now, in.Force[sp.ID])
		p.Due, p.OpenBreaker, p.Failures = r.Due, r.OpenBreaker, r.Failures
		p.Start, p.Crash, p.NotBefore = r.Start, r.Start, r.NotBefore
	case p.Verdict.Code == ReasonRunsWhileAsleep, p.Verdict.Code == ReasonMultiplePods:
		// Runs while asleep: end it. Two pods or trees: end them all; the
		// next pass starts one again (counted as a crash, so bounded).
		p.Stop = true
	case asleepButThere:
		// Not running, but there: a Failed pod (a dead tree's run file and
		// leftovers), or a pod on a node that stopped reporting. A spore
		// is awake exactly when its pod exists, so sleep removes it too.
		p.Stop = true
	}
}

// podThere reports whether the runtime holds a pod (process tree) of the
// spore that a stop must remove, whatever its phase: all but Absent and
// Terminating (going already). Unknown counts only when it is the pod's
// own phase (a lost node), never when observation itself failed.
func podThere(o Observed) bool {
	switch o.Pod {
	case PodRunning, PodPending, PodFailed:
		return true
	case PodUnknown:
		return !o.Unknown
	}
	return false
}

// wasAlive reports whether a recorded health means the spore was running
// (or was just started): dying from there is a crash. A spore recorded
// Dead before anything started it (a read-only command saw it between a
// wake and its start) was never alive.
func wasAlive(health policy.Health, reason string) bool {
	switch health {
	case "", policy.Paused, policy.Stopped, policy.Error:
		return false
	case policy.Dead:
		return reason != string(ReasonNotStarted)
	}
	// Woken while its previous pod was still going away: not started
	// since, so the start once it is gone is a first one.
	return reason != string(ReasonOldPodTerminating)
}

// record is what a pass writes into a spore's status and log, computed
// on the record as the commit reads it (fresh): the status is written
// against fresh's wish (its ObservedGeneration is fresh's generation), so
// a newer wish that arrived after the snapshot is judged here, and the
// wish itself is never written by a pass.
func (p *SporePlan) record(fresh state.Spore, now time.Time) (state.Status, []state.Event) {
	sp := fresh
	var evs []state.Event
	ev := func(kind state.EventKind, action, text string) {
		evs = append(evs, state.Event{Kind: kind, Action: action, At: now, Text: text})
	}
	if in := p.Ingest; in != nil {
		// Lines another command ingested meanwhile are not appended twice.
		var lines []state.Event
		for _, e := range in.events {
			if e.BridgeSeq > sp.BridgeSeq {
				lines = append(lines, e)
			}
		}
		if len(lines) > 0 && lines[0].BridgeSeq == sp.BridgeSeq+1 {
			evs = append(evs, lines...)
			sp.BridgeSeq = lines[len(lines)-1].BridgeSeq
			sp.ActiveAt = now // it did something: idle time starts over
		}
	}
	v := p.Verdict
	// A newer wish (wake, sleep, reset…) arrived after the snapshot: judge
	// again what was observed against it, and write over it only facts of
	// this pass (a start it made), never bookkeeping worked out from the
	// record it replaced.
	stale := fresh.Generation != p.Spore.Generation || fresh.BreakerOpen != p.Spore.BreakerOpen
	failures := p.Failures
	if stale {
		o := p.Observed
		if p.Ingest != nil && fresh.BridgeSeq != p.Ingest.base {
			// A reset accepted a new log: what this pass found wrong with
			// the old numbering no longer holds.
			o.Ingest = ""
		}
		v = Health(fresh.Desired, o, fresh.BreakerOpen)
		failures = append(slices.Clone(fresh.Failures), now)
	}
	reason := v.Code
	health := v.Effective
	text := v.Text
	if v.Effective == policy.Dead && !wasAlive(fresh.Health, fresh.HealthReason) {
		// Wished awake, not started yet: no crash to count when it starts.
		reason, text = ReasonNotStarted, "not started yet"
	}
	if v.Code == ReasonOldPodTerminating && wasAlive(fresh.Health, fresh.HealthReason) {
		// Not an old incarnation: the pod of a live spore is being
		// deleted under it (by a person, a controller, a drained node).
		// That is a death, so the start once it is gone counts.
		reason, text = ReasonTerminating, "its pod is terminating while desired Running"
	}
	switch {
	case p.OpenBreaker && stale:
		// Counted on a record a person has since changed (a reset): the
		// next pass counts again on the new one.
	case p.OpenBreaker && !sp.BreakerOpen:
		sp.BreakerOpen, sp.Failures = true, p.Failures
		health, reason = policy.Error, ReasonBreakerOpen
		text = "circuit breaker open"
		ev(state.KindBreaker, "opened", fmt.Sprintf("%d crashes in %s (last: %s); no more respawns until `sporectl reset %s`",
			len(p.Failures), p.windowOf(), v.Text, sp.ID))
	case errors.Is(p.StartErr, errWishChanged), errors.Is(p.StopErr, errWishChanged):
		// Not made: a newer wish came first. Nothing of it to record.
		return sp.StatusAtWish(), evs
	case p.Start && p.StartErr == nil && p.issued != nil && !p.issued.used.Load():
		// The runtime found it running: a racing command started it and
		// records that start itself.
		return sp.StatusAtWish(), evs
	case p.Start && p.StartErr == nil:
		if p.Crash {
			sp.Restarts++
			sp.Failures, sp.NotBefore = failures, p.NotBefore
			ev(state.KindLifecycle, "restart", restartText(sp.Restarts, v.Text, failures, p.NotBefore, now, p.recovery))
		} else {
			ev(state.KindLifecycle, "start", "started on its home")
		}
		health, reason = policy.Starting, ""
	case p.Start:
		// The runtime refused: it stays Dead, and the next start counts.
		if p.Crash {
			sp.Failures, sp.NotBefore = failures, p.NotBefore
		}
		health, reason = policy.Dead, ReasonStartFailed
		ev(state.KindLifecycle, "start-failed", "the runtime could not start it: "+p.StartErr.Error())
	case p.Stop && p.StopErr == nil:
		why := p.Verdict.Text
		switch {
		case p.SleepIdle:
			why = "asleep: " + idleText(p.Idle)
		case p.SleepBudget:
			why = "asleep: over budget (" + p.OverText + ")"
		case policy.OK(p.Verdict.Effective):
			// Asleep as wished, but its failed pod was left: say so.
			why = fmt.Sprintf("%s while desired %s", p.Observed.Pod, p.Spore.Desired)
		}
		ev(state.KindLifecycle, "stop", fmt.Sprintf("ended its processes (%s)", why))
		health, reason = Health(fresh.Desired, Observed{Pod: PodAbsent}, false).Effective, ""
		if health == policy.Dead {
			// Woken while this pass stopped it: its next start is a first
			// one, not a respawn after a crash.
			reason = ReasonNotStarted
		}
	}
	if p.ClearFailures && len(sp.Failures) > 0 && !sp.BreakerOpen {
		sp.Failures, sp.NotBefore = nil, time.Time{}
	}
	if health != sp.Health || string(reason) != sp.HealthReason {
		// Starts and stops have their own event; a spore first seen asleep
		// (a store from before health was recorded) is no news.
		quiet := health == policy.Starting || p.Stop && p.StopErr == nil ||
			sp.Health == "" && (health == policy.Paused || health == policy.Stopped)
		if !quiet {
			if text != "" {
				text = string(health) + ": " + text
			} else {
				text = string(health)
			}
			if p.Ingest != nil && p.Ingest.problem != "" && reason == p.Ingest.problem {
				text += " (" + p.Ingest.detail + ")"
			}
			ev(state.KindLifecycle, "health", text)
		}
		sp.Health, sp.HealthReason = health, string(reason)
	}
	return sp.StatusAtWish(), evs
}

// restartText is the restart event: what happened (restart n after the
// crash), and only then what the backoff and the breaker hold for a next
// crash, in words that cannot be read as "it is not running yet".
// failures are the crash times in the window, now included; notBefore is
// the earliest next respawn.
func restartText(n int, after string, failures []time.Time, notBefore, now time.Time, pol state.RecoveryPolicy) string {
	crashes := "1 crash"
	if len(failures) != 1 {
		crashes = fmt.Sprintf("%d crashes", len(failures))
	}
	text := fmt.Sprintf("restart %d after %s (%s in the window", n, after, crashes)
	// The next counted crash opens the breaker when, with it, the window
	// holds breaker-failures crashes: while the oldest of the last
	// breaker-failures-1 is still inside it. A respawn is counted no
	// sooner than notBefore, so only a deadline after that can be met.
	var opensBy time.Time
	if k := pol.BreakerFailures; k >= 2 && len(failures) >= k-1 {
		opensBy = failures[len(failures)-(k-1)].Add(time.Duration(pol.BreakerWindow))
	}
	switch {
	case opensBy.After(notBefore):
		text += fmt.Sprintf("; if it is found dead again before %s, its circuit breaker opens", opensBy.UTC().Format(time.RFC3339))
	case notBefore.After(now):
		text += fmt.Sprintf("; if it dies again, it is respawned no sooner than %s", notBefore.UTC().Format(time.RFC3339))
	}
	return text + ")"
}

// deliveredEvent records one delivery. The commit writes it only when its
// own Dequeue removed the entry: passes that overlap may both post an
// entry (the bridge keeps one), but only one of them dequeues it.
func deliveredEvent(d Delivery, now time.Time) state.Event {
	text := fmt.Sprintf("prompt %s delivered", d.Entry.ID)
	switch {
	case d.Duplicate:
		text += " (the bridge had it already)"
	case d.Position > 0:
		text += fmt.Sprintf(", queued at position %d", d.Position)
	}
	return state.Event{Kind: state.KindLifecycle, Action: "delivered", At: now, Text: text}
}

// windowOf is the breaker window the plan used (kept for the event text).
func (p *SporePlan) windowOf() time.Duration {
	if len(p.Failures) < 2 {
		return 0
	}
	return p.Failures[len(p.Failures)-1].Sub(p.Failures[0])
}
