// Package reconcile turns desired state (the store) and observed state (a
// runtime and the bridges) into effective health, and heals within bounds.
// It owns the Runtime interface that the kube and local runtimes implement.
// It never persists anything it observed.
package reconcile

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
)

// PodState is what the runtime says about a spore's pod (kube) or process
// tree (local). Recomputed by every command, never stored.
type PodState string

const (
	PodAbsent      PodState = "Absent"
	PodPending     PodState = "Pending"
	PodRunning     PodState = "Running"
	PodFailed      PodState = "Failed"
	PodTerminating PodState = "Terminating"
	PodUnknown     PodState = "Unknown"
)

// BridgeState is whether the spore's bridge answered.
type BridgeState string

const (
	BridgeUp      BridgeState = "Up"
	BridgeDown    BridgeState = "Down"
	BridgeUnknown BridgeState = "Unknown"
)

// Observed is one spore's observed state. The exported JSON fields are
// what `status -o json` prints under "observed"; the rest are typed facts
// that Health decides on, so that display text never steers a decision.
type Observed struct {
	Pod      PodState     `json:"pod"`
	Bridge   BridgeState  `json:"bridge"`
	Activity bridge.State `json:"activity"` // from the bridge; "" when it was not asked or did not answer
	Restarts int          `json:"restarts"`
	// Reason is the most telling observed reason (docs/health.md): the
	// last termination, else what is wrong with the bridge. "" when none.
	Reason Reason `json:"reason"`
	// Message is the bridge's own last words when it exited: the fatal
	// error it wrote (local: the last error line of its run log; kube: the
	// container's termination message), one line, bounded. "" when it did
	// not exit or said nothing.
	Message string `json:"message,omitempty"`
	// AgentError is why the agent's last start failed, as its bridge
	// said it (bridge.Status's agent_error), sanitised and cut to
	// bridge.MaxStatusText bytes: the bridge is the agent's. "" when the
	// bridge did not answer or its agent starts.
	AgentError string `json:"agent_error,omitempty"`

	// Pods counts pods (process trees) found for the spore; more than one
	// is reported, never guessed at.
	Pods int `json:"-"`
	// LastTermination is why the pod's (tree's) last process ended, as
	// the runtime says it: OOMKilled, Evicted, Exited, Error, …
	LastTermination Reason `json:"-"`
	// Exited is set when the bridge's process ended and nothing has
	// replaced it yet (local: Failed/Exited; kube: the container is
	// terminated or waiting to restart after it terminated): not a bridge
	// that is slow to answer.
	Exited bool `json:"-"`
	// BridgeProblem says why the bridge is not Up, or what ails it while
	// Up (BridgeUnhealthy: it cannot append to its log).
	BridgeProblem Reason `json:"-"`
	// Breach says, in words of sporectl's (never the bridge's text), how
	// the bridge broke its contract when BridgeProblem or Ingest is
	// ContractBreach; "" otherwise.
	Breach string `json:"-"`
	// BridgeErr is the error of the bridge call, for -v; never shown to
	// spores and never stored.
	BridgeErr error `json:"-"`
	// BridgeLastSeq is the bridge's last numbered line, when it answered.
	BridgeLastSeq uint64 `json:"-"`
	// Queue is the bridge's prompt queue length, when it answered.
	Queue int `json:"-"`
	// SessionID is the Claude session the bridge drives, when it answered.
	SessionID string `json:"-"`
	// Ingest says what was wrong with the bridge's lines (IngestGap,
	// BridgeLogLost), "" when they followed on from the store's.
	Ingest Reason `json:"-"`
	// Unknown is set when observation itself failed.
	Unknown bool `json:"-"`
	// Damage names what of the spore's stored data cannot be read
	// ("events/b.5.log:2: checksum mismatch …"), "" when nothing is
	// known to be. It is found by the pass's reads of the store, not by
	// observing: a damaged spore is not ingested, healed or delivered to.
	Damage string `json:"-"`
}

// observationFailed is what every spore is when the runtime could not be
// observed at all.
func observationFailed() Observed {
	return Observed{Pod: PodUnknown, Bridge: BridgeUnknown, Reason: ReasonObservationFailed, Unknown: true}
}

// display picks the one reason status prints.
func (o *Observed) display() {
	switch {
	case o.Damage != "":
		o.Reason = ReasonStoreDamage
	case o.Unknown:
		o.Reason = ReasonObservationFailed
	case o.Pods > 1:
		o.Reason = ReasonMultiplePods
	case o.Bridge == BridgeUp && o.BridgeProblem != "":
		o.Reason = o.BridgeProblem
	case o.Bridge == BridgeUp && o.Ingest != "":
		o.Reason = o.Ingest
	case o.Bridge == BridgeUp && o.AgentError != "":
		o.Reason = ReasonAgentCannotStart
	case o.BridgeProblem == ReasonContractBreach:
		o.Reason = o.BridgeProblem
	case o.LastTermination != "":
		o.Reason = o.LastTermination
	default:
		o.Reason = o.BridgeProblem
	}
}

// PodObservation is what a runtime observes of one spore without asking
// its bridge.
type PodObservation struct {
	ID       string
	State    PodState
	Ready    bool // the bridge's readiness as the runtime sees it
	Restarts int
	Reason   string // last termination reason
	// ExitLog is the end of the bridge's stderr when it exited (bounded
	// by the runtime, a few KiB): the pass takes the bridge's fatal error
	// from it (bridge.FatalError). Never a secret: the bridge writes none.
	ExitLog string
	// Exited: the bridge's process ended and nothing replaced it yet.
	Exited bool
	// Starting: Running and not Ready, but the bridge's process started
	// less than BridgeStartingWindow ago (kube: its container's started
	// and state.running.startedAt), so its bridge may answer before the
	// runtime's readiness says so (the kubelet's probe comes up to a
	// second later). The pass asks such a bridge too, briefly
	// (observe.go); one that does not answer yet is coming up, not down.
	// A runtime whose Ready is its own ask of the bridge (local) leaves
	// it false.
	Starting bool
	Owned    bool // carries sporectl's ownership marks
	Count    int  // pods found for this spore; >1 is reported, never guessed
	// IP is the address the runtime dials the bridge at directly, as this
	// observation saw it (kube in the cluster: the pod's IP); "" where it
	// dials no address of the pod's (kube from outside goes through the
	// API server's proxy; local). A BridgeLister takes it from here, so a
	// pass reads the pods once.
	IP string
}

// BridgeStartingWindow bounds how long after its process started a
// bridge that is not Ready yet is still asked (PodObservation.Starting):
// a bridge that started and then hangs, or never listens, costs a pass
// at most startingAskTimeout, and only within this window; after it the
// runtime's readiness alone decides, as for a pod that ran for long and
// stopped being Ready.
const BridgeStartingWindow = time.Minute

// FleetObservation is one observation of the fleet, or of the spores
// named: every object marked as sporectl's, by spore id, whether or not
// the store knows the id (Observe tells orphans apart).
type FleetObservation struct {
	Spores map[string]PodObservation
}

// Credentials are handed to a spore when it starts. The plaintext lives
// only in the spore's Secret (kube) or home (local), never in the store.
type Credentials struct {
	APIToken    string // the spore's token for `serve`; the store keeps its hash
	BridgeToken string // what sporectl presents to the spore's bridge
}

// CredentialSource gives the credentials for a start. A runtime asks for
// them only when it is about to start new processes for the spore, and,
// where it can, while it holds what serialises starts of that spore; so an
// issuer that records a token's hash in the store records the hash of the
// token the spore really got. A running spore is left alone and its source
// is never asked.
type CredentialSource interface {
	Credentials(ctx context.Context) (Credentials, error)
}

// Credentials makes fixed credentials their own source.
func (c Credentials) Credentials(context.Context) (Credentials, error) { return c, nil }

// Launch is what a start gives the spore besides its record.
type Launch struct {
	// Identity is what the spore's agent is told of itself: who it is and
	// which commands it may run. The runtime puts it in the spore's
	// environment (sporeenv.Identity) and never reads it; the bridge
	// ignores an empty one.
	// The pass takes it from Pass.Identity: its text is the pod-facing
	// API's (mycelia.Identity), which neither the pass nor the runtimes
	// import.
	Identity string
	// Creds gives the spore's credentials, asked for only when new
	// processes start (CredentialSource).
	Creds CredentialSource
}

// BridgeEndpoint is how to reach one spore's bridge from here.
type BridgeEndpoint struct {
	BaseURL string
	Token   string
	Client  *http.Client
}

// LogOptions say which of a spore's runtime logs to copy, as kubectl
// logs does.
type LogOptions struct {
	// Tail is the number of last lines to copy; 0 or less copies all.
	Tail int
	// Follow keeps copying what is written until ctx ends.
	Follow bool
	// Previous copies the log of the bridge before the current one (kube:
	// the previous container; local: the run before the last start).
	Previous bool
}

// Runtime is where spores run. Implementations observe, they never
// remember: every answer comes from Kubernetes or the OS.
type Runtime interface {
	// Observe looks, in one call, at the spores ids names, or with no
	// ids at every spore this runtime manages. With ids it reports those
	// alone and spends nothing on the rest of the fleet (no list of it, no
	// probe of its bridges) where the runtime can avoid it: a command about
	// one spore costs the same in a fleet of 10,000.
	Observe(ctx context.Context, ids []string) (FleetObservation, error)
	// Start makes the spore run (creating its home if missing), with the
	// identity and the credentials of l. Starting a spore that runs
	// already is success and changes nothing (l.Creds is not asked).
	Start(ctx context.Context, s state.Spore, l Launch) error
	// Stop ends the spore's processes and keeps its home.
	Stop(ctx context.Context, id string) error
	// Delete removes everything of the spore; the home only with purgeHome.
	Delete(ctx context.Context, id string, purgeHome bool) error
	// Logs copies the spore's runtime logs (the bridge's and the agent's
	// stderr, not its conversation) to w, as opt says. A spore with no
	// logs at all is state.ErrNotFound.
	Logs(ctx context.Context, id string, opt LogOptions, w io.Writer) error
	// Bridge says how to reach the spore's bridge.
	Bridge(ctx context.Context, id string) (BridgeEndpoint, error)
}
