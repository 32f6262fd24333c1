package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// reasonBridgeLogLost is reconcile.ReasonBridgeLogLost as stored in a
// record's health reason (this package cannot import reconcile, which
// calls it; reset_test.go checks the two agree).
const reasonBridgeLogLost = "BridgeLogLost"

// Reset closes spore id's circuit breaker and forgets its crashes and
// backoff, so the next wake or reconcile starts it at once: a new
// generation (a pass that saw the breaker open does not write it back)
// and a breaker event saying what was forgotten. A spore whose bridge's
// log was lost also has its new log accepted: ingest restarts from the
// bridge's line 1. An id that does not exist is state.ErrNotFound.
func Reset(ctx context.Context, tx state.Tx, id string, now time.Time) error {
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return err
	}
	text := "breaker closed, crash history forgotten"
	if !sp.BreakerOpen {
		text = "crash history forgotten (the breaker was closed)"
	}
	logLost := sp.HealthReason == reasonBridgeLogLost
	if logLost {
		text += fmt.Sprintf("; the bridge's new log is accepted: ingest restarts from its line 1 (the store holds the old log's lines up to %d)", sp.BridgeSeq)
	}
	bump(&sp, now)
	// The wish changes (a new generation, so a pass that saw the breaker
	// open does not write it back), and so does the status it resets,
	// written against that wish.
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return err
	}
	if _, err := state.UpdateStatus(ctx, tx, id, func(_ state.Spore, st *state.Status) error {
		if logLost {
			st.BridgeSeq = 0
		}
		st.BreakerOpen, st.Failures, st.NotBefore = false, nil, time.Time{}
		st.Health, st.HealthReason = "", ""
		return nil
	}); err != nil {
		return err
	}
	_, err = tx.Append(ctx, id, []state.Event{{Kind: state.KindBreaker, Action: "reset", At: now, Text: text}})
	return err
}
