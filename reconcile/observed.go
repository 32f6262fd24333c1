// Package reconcile turns desired state (the store) and observed state (a
// runtime and the bridges) into effective health, and heals within bounds.
// It owns the Runtime interface that the kube and local runtimes implement.
// It never persists anything it observed.
package reconcile

import (
	"context"
	"io"
	"net/http"

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

// Observed is one spore's observed state, as `status -o json` prints it.
type Observed struct {
	Pod      PodState    `json:"pod"`
	Bridge   BridgeState `json:"bridge"`
	Activity string      `json:"activity"` // idle, working, blocked, … (from the bridge; "" when not asked)
	Restarts int         `json:"restarts"`
	Reason   string      `json:"reason"` // OOMKilled, Evicted, Error, … ("" when none)
}

// PodObservation is what a runtime observes of one spore without asking
// its bridge.
type PodObservation struct {
	ID       string
	State    PodState
	Ready    bool // the bridge's readiness as the runtime sees it
	Restarts int
	Reason   string // last termination reason
	Owned    bool   // carries sporectl's ownership marks
	Count    int    // pods found for this spore; >1 is reported, never guessed
}

// FleetObservation is one observation of the whole fleet: every object
// marked as sporectl's, by spore id, whether or not the store knows the id
// (Observe tells orphans apart).
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

// BridgeEndpoint is how to reach one spore's bridge from here.
type BridgeEndpoint struct {
	BaseURL string
	Token   string
	Client  *http.Client
}

// Runtime is where spores run. Implementations observe, they never
// remember: every answer comes from Kubernetes or the OS.
type Runtime interface {
	// Observe looks at every spore this runtime manages in one call.
	Observe(ctx context.Context) (FleetObservation, error)
	// Start makes the spore run (creating its home if missing), with
	// credentials from creds. Starting a spore that runs already is
	// success and changes nothing.
	Start(ctx context.Context, s state.Spore, creds CredentialSource) error
	// Stop ends the spore's processes and keeps its home.
	Stop(ctx context.Context, id string) error
	// Delete removes everything of the spore; the home only with purgeHome.
	Delete(ctx context.Context, id string, purgeHome bool) error
	// Logs copies the spore's runtime logs (not its conversation) to w.
	Logs(ctx context.Context, id string, w io.Writer) error
	// Bridge says how to reach the spore's bridge.
	Bridge(ctx context.Context, id string) (BridgeEndpoint, error)
}
