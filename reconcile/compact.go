package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
)

// Compacter is a bridge client that can compact its agent's context
// (POST /v1/compact). *bridge.Client is one; a BridgeClient need not be.
type Compacter interface {
	Compact(ctx context.Context) (bridge.PromptAccepted, error)
}

var _ Compacter = (*bridge.Client)(nil)

// ErrCannotCompact: the dialled bridge client offers no Compact.
var ErrCannotCompact = errors.New("this bridge client cannot compact")

// Compact asks id's bridge to compact its agent's context: the bridge
// queues /compact behind the prompts it holds. It reads the store's
// settings to build the runtime and dials the bridge the way a pass does;
// it writes nothing. An error names the spore; it is the bridge's (down,
// refusing) or ErrCannotCompact.
func (ps *Pass) Compact(ctx context.Context, id string) (bridge.PromptAccepted, error) {
	var settings state.Settings
	err := ps.Store.View(ctx, func(tx state.Tx) error {
		var err error
		if settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		_, err = tx.Spore(ctx, id)
		return err
	})
	if err != nil {
		return bridge.PromptAccepted{}, err
	}
	rt, err := ps.Runtime(ctx, settings)
	if err != nil {
		return bridge.PromptAccepted{}, fmt.Errorf("compact %s: %w", id, err)
	}
	c, err := dialBridge(ctx, rt, ps.dial(), nil, id)
	if err != nil {
		return bridge.PromptAccepted{}, fmt.Errorf("compact %s: %w", id, err)
	}
	cc, ok := c.(Compacter)
	if !ok {
		return bridge.PromptAccepted{}, fmt.Errorf("compact %s: %w", id, ErrCannotCompact)
	}
	a, err := cc.Compact(ctx)
	if err != nil {
		return bridge.PromptAccepted{}, fmt.Errorf("compact %s: %w", id, err)
	}
	return a, nil
}
