package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

// findActionQuery is one probe of events_message_action (schema 9), the
// partial index of prompt and message events by (spore_id, action, seq):
// the literal kind list lets the planner use it whatever $2 is, and agent
// lines, most of a busy log, are not in it
// (TestLogReadsUseTheIndex checks the plan with EXPLAIN).
const findActionQuery = `SELECT ` + eventColumns + ` FROM sporectl.events
	WHERE spore_id = $1 AND kind IN ('prompt', 'message') AND action = $3 AND kind = $2 AND at >= $4
	ORDER BY seq DESC LIMIT 1`

// FindAction is one index probe; inside an Update it locks the spore's
// row first, as Tail does, so the answer holds until COMMIT.
func (t *tx) FindAction(ctx context.Context, id string, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	op := "look up a " + string(kind) + " id in the log of " + id
	if kind != state.KindPrompt && kind != state.KindMessage {
		return state.Event{}, false, &state.InvalidError{Field: "event kind", Value: string(kind), Reason: "FindAction looks up prompt and message ids only"}
	}
	if err := t.lockInUpdate(ctx, op, id); err != nil {
		return state.Event{}, false, err
	}
	var sc eventScan
	err := t.tx.QueryRow(ctx, findActionQuery, id, string(kind), []byte(action), since).Scan(sc.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.Event{}, false, t.sporeExists(ctx, op, id)
	}
	if err != nil {
		return state.Event{}, false, classify(op, err)
	}
	e, err := sc.event(id)
	if err != nil {
		return state.Event{}, false, err
	}
	return e, true, nil
}
