package reconcile

import (
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// Effective is a spore's health as reconcile(desired, observed, breaker)
// computes it; docs/health.md has the whole table.
type Effective string

const (
	Healthy  Effective = "Healthy"  // desired Running; running, bridge up, agent not blocked
	Dead     Effective = "Dead"     // desired Running; nothing alive
	Diverged Effective = "Diverged" // reality differs in another way (e.g. runs while asleep)
	Suspect  Effective = "Suspect"  // something runs but the bridge does not answer, or it is not up yet
	Blocked  Effective = "Blocked"  // the agent waits for a person
	Paused   Effective = "Paused"   // asleep as desired
	Stopped  Effective = "Stopped"  // off as desired
	Error    Effective = "Error"    // circuit breaker open: a person must `reset`
)

// OK reports whether e needs nobody's attention.
func (e Effective) OK() bool { return e == Healthy || e == Paused || e == Stopped }

// Health computes effective health. It is a pure function of its inputs:
// no clock, no I/O.
func Health(desired state.Desired, o Observed, breakerOpen bool) (Effective, string) {
	if breakerOpen {
		return Error, "circuit breaker open after repeated crashes; run `sporectl reset`"
	}
	if o.Reason == "MultiplePods" {
		return Diverged, "more than one pod or process tree for this spore"
	}
	if o.Pod == PodUnknown {
		// Nothing is known, so nothing may be concluded (least of all
		// Diverged, which reconcile would act on).
		return Suspect, orReason(o.Reason, "runtime state unknown")
	}
	alive := o.Pod != PodAbsent && o.Pod != PodFailed
	switch desired {
	case state.Stopped, state.Paused:
		want := Stopped
		if desired == state.Paused {
			want = Paused
		}
		switch {
		case !alive:
			return want, ""
		case o.Pod == PodTerminating:
			return want, "terminating"
		}
		return Diverged, fmt.Sprintf("%s while desired %s", o.Pod, desired)
	}
	// desired Running
	switch o.Pod {
	case PodAbsent:
		return Dead, orReason(o.Reason, "nothing running")
	case PodFailed:
		return Dead, orReason(o.Reason, "failed")
	case PodTerminating:
		return Diverged, "terminating while desired Running"
	case PodPending:
		return Suspect, orReason(o.Reason, "pending")
	case PodUnknown:
		return Suspect, orReason(o.Reason, "runtime state unknown")
	}
	switch o.Bridge {
	case BridgeUp:
		switch {
		case o.Reason == "BridgeUnhealthy":
			return Suspect, "the bridge cannot append to its log"
		case o.Activity == "backoff":
			return Suspect, "the agent keeps dying; the bridge is backing off"
		case o.Activity == "blocked":
			return Blocked, "the agent waits for a person"
		}
		return Healthy, o.Reason
	case BridgeDown:
		return Suspect, orReason(o.Reason, "bridge not answering")
	}
	return Suspect, orReason(o.Reason, "bridge state unknown")
}

func orReason(r, def string) string {
	if r != "" {
		return r
	}
	return def
}
