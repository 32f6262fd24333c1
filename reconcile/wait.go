package reconcile

import (
	"context"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Wait long-polls id's bridge until it has a line after the last one the
// store holds, or wait passes. It reads and writes nothing of the store
// but the spore's record: the caller runs the pass afterwards to ingest.
// An error means the bridge could not be asked (down, restarting).
func (ps *Pass) Wait(ctx context.Context, id string, wait time.Duration) error {
	var settings state.Settings
	var sp state.Spore
	err := ps.Store.View(ctx, func(tx state.Tx) error {
		var err error
		if settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		sp, err = tx.Spore(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	rt, err := ps.Runtime(ctx, settings)
	if err != nil {
		return err
	}
	c, err := dialBridge(ctx, rt, ps.dial(), nil, id)
	if err != nil {
		return err
	}
	_, err = c.Events(ctx, sp.BridgeSeq, 1, wait)
	return err
}
