package reconcile

import "github.com/sporectl/sporectl/state"

// Reason is the stable name of why a spore is in its state. Each one is
// documented in docs/health.md; scripts may match on them.
type Reason string

// Reasons observed of the runtime or the bridge.
const (
	ReasonObservationFailed Reason = "ObservationFailed" // the runtime could not be observed
	ReasonMultiplePods      Reason = "MultiplePods"      // more than one pod or process tree
	ReasonOOMKilled         Reason = "OOMKilled"         // the kernel ended it for memory
	ReasonEvicted           Reason = "Evicted"           // the node evicted the pod
	ReasonExited            Reason = "Exited"            // its process ended (local runtime)
	ReasonBridgeNotAnswer   Reason = "BridgeNotAnswering"
	ReasonBridgeRefused     Reason = "BridgeRefused"   // the way to the bridge refused the call (API server proxy 400/403)
	ReasonBridgeUnhealthy   Reason = "BridgeUnhealthy" // the bridge answers but cannot append to its log
	ReasonNoEndpoint        Reason = "NoBridgeEndpoint"
	// ReasonBridgeNotAsked: the pass's deadline for asking bridges ran
	// out before this one's turn (many bridges behind a slow way to
	// them): its state is unknown, not down.
	ReasonBridgeNotAsked Reason = "BridgeNotAsked"
	// ReasonBridgeStarting: its pod runs and is not ready yet, its bridge
	// started a moment ago (PodObservation.Starting) and does not answer
	// yet: coming up, not down.
	ReasonBridgeStarting Reason = "BridgeStarting"
	// ReasonContractBreach: the bridge's answer broke its contract (too
	// long, not JSON, a state none of the five, numbers that go back, a
	// usage no turn can spend); the bridge is the agent's, so nothing
	// more of that answer is taken (docs/bridge.md).
	ReasonContractBreach Reason = "ContractBreach"
)

// Reasons the plan derives.
const (
	ReasonNothingRunning Reason = "NothingRunning"
	ReasonNotStarted     Reason = "NotStarted"  // recorded only: desired Running, never started since
	ReasonStartFailed    Reason = "StartFailed" // recorded only: the runtime refused the start

	ReasonFailed          Reason = "Failed"
	ReasonPending         Reason = "Pending"
	ReasonTerminating     Reason = "Terminating"
	ReasonRunsWhileAsleep Reason = "RunsWhileAsleep"
	ReasonUnknown         Reason = "RuntimeUnknown"
	ReasonBridgeUnknown   Reason = "BridgeUnknown"
	ReasonAgentBackoff    Reason = "AgentBackoff"
	ReasonAgentBlocked    Reason = "AgentBlocked"
	// ReasonAgentCannotStart: the bridge answers, but its agent's last
	// start failed (it could not be run, or exited before writing a
	// line); the sentence carries the bridge's agent_error.
	ReasonAgentCannotStart Reason = "AgentCannotStart"
	ReasonBreakerOpen      Reason = "BreakerOpen"
	ReasonIngestGap        Reason = "IngestGap" // the bridge's numbers skip, repeat or go back
	ReasonBridgeLogLost    Reason = "BridgeLogLost"
	// ReasonStoreDamage: the spore's stored data (its record, its event
	// log) cannot be read. It is judged alone (Error, the damage named)
	// and the pass goes on for every other spore; `sporectl repair` sets
	// the damage aside, `sporectl check` names it.
	ReasonStoreDamage Reason = state.ReasonStoreDamage
	// ReasonIngestQuota: the spore stored its daily quota of bytes
	// (the ingest-quota colony setting); its bridge keeps what waits,
	// and ingest takes it on the next UTC day.
	ReasonIngestQuota Reason = "IngestQuota"

	// ReasonOldPodTerminating: desired Running, and its only pod (process
	// tree) is the previous one going away, as after a sleep and a wake;
	// a new one starts once it is gone. Not a crash, unless the spore was
	// alive until then (its pod deleted under it): the pass then records
	// ReasonTerminating, and the start after it counts.
	ReasonOldPodTerminating Reason = "OldPodTerminating"
)
