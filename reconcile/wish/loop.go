package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// SetLoop records that spore id, a [swarm] mycologist, wants a loop
// prompt every `every` (0: no loop), as `swarm loop` asks it, by from: a
// new generation and a "loop" event, and the first due time (now +
// every) in its status, written against the new wish. A loop that is
// already off stays so and writes nothing. It returns the spore as
// written and whether anything was. An id that does not exist is
// state.ErrNotFound; an interval out of bounds is *state.InvalidError.
func SetLoop(ctx context.Context, tx state.Tx, id string, every time.Duration, from string, now time.Time) (state.Spore, bool, error) {
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, false, err
	}
	var text string
	if every == 0 {
		if sp.Loop == 0 {
			return sp, false, nil
		}
		text = fmt.Sprintf("swarm loop (every %s) stopped", sp.Loop)
		sp.Loop, sp.LoopDue = 0, time.Time{}
	} else {
		sp.Loop, sp.LoopDue = state.Duration(every), now.Add(every)
		text = fmt.Sprintf("swarm loop every %s; first prompt due %s", every, sp.LoopDue.Format(time.RFC3339))
	}
	bump(&sp, now)
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return sp, false, err
	}
	due := sp.LoopDue
	if sp, err = state.UpdateStatus(ctx, tx, id, func(_ state.Spore, st *state.Status) error {
		st.LoopDue = due
		return nil
	}); err != nil {
		return sp, false, err
	}
	if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "loop", From: from, At: now, Text: text}}); err != nil {
		return sp, false, err
	}
	return sp, true, nil
}
