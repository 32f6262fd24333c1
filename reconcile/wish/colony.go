package wish

import (
	"context"
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// SetColony records colony name's idle-sleep settings (SleepAfter,
// WakeOnMessage) in the store's settings, as `sporectl colony set` or an
// applied manifest asks it; the zero value removes them. No spore's wish
// changes: reconcile reads the colony's settings on every pass, so no
// generation moves. The same settings again write nothing. It reports
// whether it wrote; settings out of bounds are *state.InvalidError.
func SetColony(ctx context.Context, tx state.Tx, name string, c state.ColonySettings) (bool, error) {
	if err := state.ValidateName("colony", name); err != nil {
		return false, err
	}
	cur, err := tx.Settings(ctx)
	if err != nil {
		return false, fmt.Errorf("read settings: %w", err)
	}
	if cur.Colony(name).Equal(c) {
		return false, nil
	}
	next := cur.WithColony(name, c)
	if err := next.Validate(); err != nil {
		return false, err
	}
	if err := tx.PutSettings(ctx, next); err != nil {
		return false, fmt.Errorf("write colony %s's settings: %w", name, err)
	}
	return true, nil
}
