package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// SetSleepAfter records that spore id is put to sleep after `after` idle
// (0: its colony's setting), as `sporectl set sleep-after` or an applied
// manifest asks it, by from: a new generation and a "sleep-after" event.
// The same value again writes nothing. It returns the spore as written
// and whether anything was. An id that does not exist is
// state.ErrNotFound; a value out of bounds is *state.InvalidError; the
// [arch] mycologist, which is always on, is refused with *RefusedError.
func SetSleepAfter(ctx context.Context, tx state.Tx, id string, after time.Duration, from string, now time.Time) (state.Spore, bool, error) {
	if err := state.ValidateSleepAfter("sleep after", state.Duration(after)); err != nil {
		return state.Spore{}, false, err
	}
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	if sp.SleepAfter == state.Duration(after) {
		return sp, false, nil
	}
	if policy.AlwaysOn(sp) {
		return sp, false, &RefusedError{Msg: fmt.Sprintf("set sleep-after %s: spore %s is the [arch] mycologist, which is always on: it is never put to sleep (nothing was changed)", id, id)}
	}
	text := fmt.Sprintf("sleeps after %s idle", after)
	if after == 0 {
		text = "sleeps after its colony's idle time (sleep-after unset)"
	}
	sp.SleepAfter = state.Duration(after)
	bump(&sp, now)
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return sp, false, err
	}
	if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "sleep-after", From: from, At: now, Text: text}}); err != nil {
		return sp, false, err
	}
	return sp, true, nil
}
