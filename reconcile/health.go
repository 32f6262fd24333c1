package reconcile

import (
	"fmt"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// Verdict is effective health with its reason: a stable code and a
// sentence for a person.
type Verdict struct {
	Effective policy.Health
	Code      Reason
	Text      string
}

// Health computes effective health. It is a pure function of its inputs:
// no clock, no I/O. It decides on typed facts only (Observed's Pod,
// Bridge, Activity, Pods, LastTermination, BridgeProblem, Ingest, whether
// the bridge reported an AgentError), never
// on display text. Damage comes first: a spore whose stored data cannot be
// read is not acted on whatever else is true of it.
func Health(desired state.Desired, o Observed, breakerOpen bool) Verdict {
	v := func(e policy.Health, code Reason, text string) Verdict { return Verdict{e, code, text} }
	if o.Damage != "" {
		// Nothing of it can be trusted to act on until a person looks.
		return v(policy.Error, ReasonStoreDamage, "store damage: "+o.Damage)
	}
	if breakerOpen {
		return v(policy.Error, ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`")
	}
	if o.Unknown || o.Pod == PodUnknown {
		// Nothing is known, so nothing may be concluded (least of all
		// Diverged, which reconcile would act on).
		if o.Unknown {
			return v(policy.Suspect, ReasonObservationFailed, "observation failed")
		}
		return v(policy.Suspect, ReasonUnknown, "runtime state unknown")
	}
	if o.Pods > 1 {
		return v(policy.Diverged, ReasonMultiplePods, "more than one pod or process tree for this spore")
	}
	alive := o.Pod != PodAbsent && o.Pod != PodFailed
	switch desired {
	case state.Stopped, state.Paused:
		want := policy.Stopped
		if desired == state.Paused {
			want = policy.Paused
		}
		switch {
		case !alive:
			return v(want, "", "")
		case o.Pod == PodTerminating:
			return v(want, ReasonTerminating, "terminating")
		}
		return v(policy.Diverged, ReasonRunsWhileAsleep, fmt.Sprintf("%s while desired %s", o.Pod, desired))
	}
	// desired Running
	switch o.Pod {
	case PodAbsent:
		if o.LastTermination != "" {
			return v(policy.Dead, o.LastTermination, o.termination())
		}
		return v(policy.Dead, ReasonNothingRunning, "nothing running")
	case PodFailed:
		if o.LastTermination != "" {
			return v(policy.Dead, o.LastTermination, o.termination())
		}
		return v(policy.Dead, ReasonFailed, "failed")
	case PodTerminating:
		// The previous pod (tree) going away, as after a sleep and a wake:
		// nothing to act on, and nothing dead yet. The pass starts the new
		// one once the old one is gone (Absent).
		return v(policy.Suspect, ReasonOldPodTerminating, "its old pod is still terminating; a new one starts once it is gone")
	case PodPending:
		if o.LastTermination != "" {
			return v(policy.Suspect, o.LastTermination, "pending after "+o.termination())
		}
		return v(policy.Suspect, ReasonPending, "pending")
	}
	switch o.Bridge {
	case BridgeUp:
		switch {
		case o.BridgeProblem == ReasonBridgeUnhealthy:
			return v(policy.Suspect, ReasonBridgeUnhealthy, "the bridge cannot append to its log")
		case o.Ingest == ReasonContractBreach:
			return v(policy.Suspect, ReasonContractBreach, "the bridge broke its contract: nothing from the breach on is ingested")
		case o.Ingest == ReasonIngestQuota:
			return v(policy.Suspect, ReasonIngestQuota, "it stored its daily quota of bytes: nothing more is stored today")
		case o.Ingest == ReasonBridgeLogLost:
			return v(policy.Suspect, ReasonBridgeLogLost, "the bridge's log is behind the store's: its home lost lines the store keeps")
		case o.Ingest != "":
			return v(policy.Suspect, o.Ingest, "the bridge's line numbers do not follow on from the store's")
		case o.AgentError != "":
			// Before backoff, which it causes: why the agent keeps dying
			// is the telling part, and it needs a person (a binary to
			// install or fix), not waiting.
			return v(policy.Suspect, ReasonAgentCannotStart, "the agent cannot start: "+o.AgentError)
		case o.Activity == bridge.StateBackoff:
			return v(policy.Suspect, ReasonAgentBackoff, "the agent keeps dying; the bridge is backing off")
		case o.Activity == bridge.StateBlocked:
			return v(policy.Blocked, ReasonAgentBlocked, "the agent waits for a person")
		}
		return v(policy.Healthy, "", "")
	case BridgeDown:
		if o.BridgeProblem == ReasonContractBreach {
			// It answered, but broke the contract: what it said is not
			// taken, and that is the telling part.
			text := "the bridge broke its contract"
			if o.Breach != "" {
				text += ": " + o.Breach
			}
			return v(policy.Suspect, ReasonContractBreach, text)
		}
		if o.LastTermination != "" {
			// Came back after a crash and not answering yet: the crash is
			// the telling part.
			return v(policy.Suspect, o.LastTermination, o.termination())
		}
		switch o.BridgeProblem {
		case ReasonBridgeRefused:
			return v(policy.Suspect, ReasonBridgeRefused, "the way to the bridge refused the call")
		case ReasonNoEndpoint:
			return v(policy.Suspect, ReasonNoEndpoint, "no way to reach the bridge")
		}
		return v(policy.Suspect, ReasonBridgeNotAnswer, "bridge not answering")
	}
	if o.BridgeProblem == ReasonBridgeStarting {
		if o.LastTermination != "" {
			// Restarted after a crash and coming up again: the crash is
			// the telling part, as for a bridge Down after one.
			return v(policy.Suspect, o.LastTermination, o.termination())
		}
		return v(policy.Suspect, ReasonBridgeStarting, "bridge starting: its container started a moment ago and it does not answer yet")
	}
	if o.BridgeProblem == ReasonBridgeNotAsked {
		return v(policy.Suspect, ReasonBridgeNotAsked, "bridge not asked: the pass's time for asking bridges ran out before its turn")
	}
	return v(policy.Suspect, ReasonBridgeUnknown, "bridge state unknown")
}

// termination is the last termination for a person: its reason, and the
// bridge's own words when it said why it exited ("Exited: no claude
// executable: …").
func (o Observed) termination() string {
	if o.Message == "" {
		return string(o.LastTermination)
	}
	return string(o.LastTermination) + ": " + o.Message
}
