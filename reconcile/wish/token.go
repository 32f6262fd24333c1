package wish

import (
	"context"
	"time"

	"github.com/sporectl/sporectl/state"
)

// RotateToken replaces spore id's API token with the hash of a fresh one
// whose plaintext is dropped at once, with a lifecycle event saying so:
// from then on serve refuses the old token, and nobody holds the new one
// until the spore's next start hands it a token of its own. The
// generation is kept: the wish is unchanged. An id that does not exist is
// state.ErrNotFound.
func RotateToken(ctx context.Context, tx state.Tx, id string, now time.Time) error {
	if _, err := tx.Spore(ctx, id); err != nil {
		return err
	}
	// Only the hash is ever kept.
	_, hash, err := state.NewToken()
	if err != nil {
		return err
	}
	if err := tx.SetTokenHash(ctx, id, hash); err != nil {
		return err
	}
	_, err = tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "token-rotated", At: now,
		Text: "API token rotated: the old one no longer authenticates; the spore gets a new one on its next start"}})
	return err
}
