package reconcile

import (
	"context"
	"time"

	"github.com/sporectl/sporectl/bridge"
)

// BridgeClient is what a pass asks of one bridge. *bridge.Client
// implements it; tests use fakes.
type BridgeClient interface {
	Status(ctx context.Context) (bridge.Status, error)
	Events(ctx context.Context, after uint64, limit int, wait time.Duration) (bridge.Events, error)
	Prompt(ctx context.Context, p bridge.PromptRequest) (bridge.PromptAccepted, error)
}

// Dialer turns an endpoint into a client.
type Dialer func(ep BridgeEndpoint) (BridgeClient, error)

// DialHTTP is the Dialer for real bridges.
func DialHTTP(ep BridgeEndpoint) (BridgeClient, error) {
	return bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
}

var _ BridgeClient = (*bridge.Client)(nil)
