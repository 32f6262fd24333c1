package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Drop removes entry entryID from spore id's outbox, queued or a dead
// letter, and records it as an event on the spore's log ("dropped", by
// names who: "user:alice"), in one transaction. It returns the entry as
// it was. An entry that is not there is ErrNotFound (wrapped), as is a
// spore that is not. A queued entry that a pass is posting meanwhile may
// still reach the agent: the bridge has it or not, and the pass's commit
// finds nothing to dequeue.
func Drop(ctx context.Context, st state.Store, id, entryID, by string, now time.Time) (state.OutboxEntry, error) {
	now = now.UTC()
	var got state.OutboxEntry
	err := st.Update(ctx, func(tx state.Tx) error {
		got = state.OutboxEntry{}
		queued, err := tx.Outbox(ctx, id)
		if err != nil {
			return err
		}
		dead, err := tx.DeadLetters(ctx, id)
		if err != nil {
			return err
		}
		found := false
		for _, e := range append(queued, dead...) {
			if e.ID == entryID {
				got, found = e, true
				break
			}
		}
		if !found {
			return fmt.Errorf("message %s in the outbox of spore %s: %w", entryID, id, state.ErrNotFound)
		}
		if err := tx.Dequeue(ctx, id, entryID); err != nil {
			return fmt.Errorf("drop message %s of spore %s: %w", entryID, id, err)
		}
		what := "queued"
		if got.Dead != nil {
			what = "a dead letter"
		}
		_, err = tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "dropped", From: by, At: now,
			Text: fmt.Sprintf("prompt %s (%s, from %s) dropped from the outbox by %s: it is not delivered", entryID, what, got.From, by)}})
		return err
	})
	return got, err
}
