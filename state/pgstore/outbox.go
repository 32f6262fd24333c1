package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

func (t *tx) Outbox(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	op := "read outbox of " + id
	if err := t.lockInUpdate(ctx, op, id); err != nil {
		return nil, err
	}
	return t.entries(ctx, op, id, false)
}

func (t *tx) DeadLetters(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	op := "read dead letters of " + id
	if err := t.lockInUpdate(ctx, op, id); err != nil {
		return nil, err
	}
	return t.entries(ctx, op, id, true)
}

// DeadLetterCounts is one read of the partial index outbox_dead, whose
// rows are the dead letters alone.
func (t *tx) DeadLetterCounts(ctx context.Context) (map[string]int, error) {
	const op = "count dead letters"
	rows, err := t.tx.Query(ctx, `SELECT spore_id, count(*) FROM sporectl.outbox WHERE dead_at IS NOT NULL GROUP BY spore_id`)
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, classify(op, err)
		}
		out[id] = n
	}
	return out, classify(op, rows.Err())
}

// outboxRows are one spore's outbox as a transaction read it: its queued
// entries and its dead letters, each in the order queued.
type outboxRows struct{ queued, dead []state.OutboxEntry }

// outboxQuery reads a spore's whole outbox, queued and dead, with its
// head, in one statement: the spore's row joined to its outbox rows (one
// row of NULLs when the outbox is empty, none when there is no such
// spore), so an empty outbox needs no existence check of its own, and a
// pass that reads the queued entries and then the dead letters (LoadIn)
// reads once.
const outboxQuery = `SELECT s.last_seq, o.id, o.sender, o.body, o.at, o.wake, o.over_budget, o.dead_at, o.dead_reason
	FROM sporectl.spores s LEFT JOIN sporectl.outbox o ON o.spore_id = s.id
	WHERE s.id = $1 ORDER BY o.pos`

// entries reads the spore's queued entries or its dead letters, in the
// order queued. Both are read at once and kept (t.outboxes) until the
// transaction writes the spore's outbox: the snapshot, or in an Update the
// spore's row lock every writer of its outbox takes first, holds them
// still.
func (t *tx) entries(ctx context.Context, op, id string, dead bool) ([]state.OutboxEntry, error) {
	got, ok := t.outboxes[id]
	if !ok {
		var err error
		if got, err = t.readOutbox(ctx, op, id); err != nil {
			return nil, err
		}
		if t.outboxes == nil {
			t.outboxes = map[string]outboxRows{}
		}
		t.outboxes[id] = got
	}
	if dead {
		return slices.Clone(got.dead), nil
	}
	return slices.Clone(got.queued), nil
}

func (t *tx) readOutbox(ctx context.Context, op, id string) (outboxRows, error) {
	if err := t.orderRow(ctx, op, id); err != nil {
		return outboxRows{}, err
	}
	rows, err := t.tx.Query(ctx, outboxQuery, id)
	if err != nil {
		return outboxRows{}, classify(op, err)
	}
	defer rows.Close()
	var (
		out   outboxRows
		last  int64
		found bool
	)
	for rows.Next() {
		found = true
		e, dead, ok, err := scanEntry(rows, &last)
		if err != nil {
			return outboxRows{}, classify(op, err)
		}
		if !ok {
			continue // the spore's row alone: an empty outbox
		}
		e.Spore = id
		if dead {
			out.dead = append(out.dead, e)
		} else {
			out.queued = append(out.queued, e)
		}
	}
	if err := rows.Err(); err != nil {
		return outboxRows{}, classify(op, err)
	}
	if !found {
		return outboxRows{}, state.SporeNotFound(id)
	}
	// Inside an Update the row is held (lockInUpdate), so its head is
	// as sure as in a View's snapshot.
	t.found(id, last)
	return out, nil
}

// scanEntry scans lead, then an outbox row's id, sender, body, at, wake,
// over_budget, dead_at and dead_reason; ok is false for a row of NULLs
// (outboxQuery's empty outbox), dead for a dead letter.
func scanEntry(row pgx.Row, lead ...any) (e state.OutboxEntry, dead, ok bool, err error) {
	var (
		entryID, reason *string
		sender, body    []byte
		at, deadAt      *time.Time
		wake, over      *bool
	)
	if err := row.Scan(append(lead, &entryID, &sender, &body, &at, &wake, &over, &deadAt, &reason)...); err != nil {
		return e, false, false, err
	}
	if entryID == nil {
		return e, false, false, nil
	}
	e = state.OutboxEntry{ID: *entryID, From: string(sender), Text: string(body)}
	if at != nil {
		e.At = at.UTC()
	}
	if wake != nil {
		e.Wake = *wake
	}
	if over != nil {
		e.OverBudget = *over
	}
	if deadAt != nil && reason != nil {
		e.Dead = &state.DeadLetter{Reason: *reason, At: deadAt.UTC()}
	}
	return e, deadAt != nil, true, nil
}

// wroteOutbox forgets what was read of spore id's outbox: the transaction
// has just changed it.
func (t *tx) wroteOutbox(id string) { delete(t.outboxes, id) }

const (
	pendingLockQuery = `SELECT s.id FROM sporectl.spores s
		WHERE s.id IN (SELECT spore_id FROM sporectl.outbox WHERE dead_at IS NULL) ORDER BY s.id FOR UPDATE OF s`
	pendingQuery = `SELECT spore_id, id, sender, body, at, wake, over_budget FROM sporectl.outbox
		WHERE dead_at IS NULL ORDER BY spore_id, pos`
)

// Pending is one ordered scan of sporectl.outbox along outbox_order
// (spore_id, pos), so it reads the queued entries and nothing else. Inside
// an Update one statement first locks the row of every spore with queued
// entries, in id order like Spores, and the read that follows sees their
// latest committed outboxes, which stay true until COMMIT.
func (t *tx) Pending(ctx context.Context) (map[string][]state.OutboxEntry, error) {
	const op = "read pending outbox entries"
	if !t.readOnly {
		if err := t.lockPending(ctx, op); err != nil {
			return nil, err
		}
	}
	rows, err := t.tx.Query(ctx, pendingQuery)
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	out := map[string][]state.OutboxEntry{}
	for rows.Next() {
		var e state.OutboxEntry
		var sender, body []byte
		if err := rows.Scan(&e.Spore, &e.ID, &sender, &body, &e.At, &e.Wake, &e.OverBudget); err != nil {
			return nil, classify(op, err)
		}
		e.From, e.Text, e.At = string(sender), string(body), e.At.UTC()
		out[e.Spore] = append(out[e.Spore], e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(op, err)
	}
	return out, nil
}

// lockPending locks the rows of every spore with queued entries, in id
// order (only tried when a row is held already: lockorder.go).
func (t *tx) lockPending(ctx context.Context, op string) error {
	pending := func(w *lockSet) { w.pending = true }
	rows, err := t.tx.Query(ctx, pendingLockQuery+t.rowsNowait())
	if err != nil {
		return t.refuseRows(op, err, pending)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return classify(op, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return t.refuseRows(op, err, pending)
	}
	t.tookAll(" FOR UPDATE", len(ids), func(i int) string { return ids[i] })
	return nil
}

func (t *tx) Enqueue(ctx context.Context, e state.OutboxEntry) (bool, error) {
	op := "enqueue for " + e.Spore
	if err := t.writable(op); err != nil {
		return false, err
	}
	if err := checkEntry(&e); err != nil {
		return false, err
	}
	if e.Dead != nil {
		return false, &state.InvalidError{Field: "message " + quote.Value(e.ID), Value: "dead", Reason: "a queued entry is not dead; only Bury makes a dead letter"}
	}
	if err := t.lockSpore(ctx, op, e.Spore); err != nil {
		return false, err
	}
	// Like Append, a zero time is stamped with the transaction's time.
	if e.At.IsZero() {
		now, err := t.txTime(ctx)
		if err != nil {
			return false, err
		}
		e.At = now
	}
	tag, err := t.tx.Exec(ctx, `INSERT INTO sporectl.outbox (spore_id, id, sender, body, at, wake, over_budget)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (spore_id, id) DO NOTHING`,
		e.Spore, e.ID, []byte(e.From), []byte(e.Text), e.At, e.Wake, e.OverBudget)
	if err != nil {
		t.wroteOutbox(e.Spore)
		return false, classify(op, err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil // queued already: the outbox is as it was
	}
	t.enqueued(e)
	return true, nil
}

// enqueued adds e, just inserted, to what the transaction read of its
// spore's outbox, as a read would now find it: last in the queue (its
// pos is the greatest: the spore's row lock keeps other writers out),
// its time as stored, to the microsecond.
func (t *tx) enqueued(e state.OutboxEntry) {
	got, ok := t.outboxes[e.Spore]
	if !ok {
		return
	}
	e.At = e.At.Truncate(time.Microsecond).UTC()
	got.queued = append(slices.Clip(got.queued), e)
	t.outboxes[e.Spore] = got
}

func (t *tx) Dequeue(ctx context.Context, spore, entryID string) error {
	op := fmt.Sprintf("dequeue %q for %s", entryID, spore)
	if err := t.writable(op); err != nil {
		return err
	}
	if err := t.lockSpore(ctx, op, spore); err != nil {
		return err
	}
	t.wroteOutbox(spore)
	tag, err := t.tx.Exec(ctx, `DELETE FROM sporectl.outbox WHERE spore_id = $1 AND id = $2`, spore, entryID)
	if err != nil {
		return classify(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("message %s for %s: %w", entryID, spore, state.ErrNotFound)
	}
	return nil
}

func (t *tx) Bury(ctx context.Context, spore, entryID string, d state.DeadLetter) error {
	op := fmt.Sprintf("make %s of %s a dead letter", quote.Value(entryID), spore)
	if err := t.writable(op); err != nil {
		return err
	}
	d.At = state.Stamp(d.At)
	if err := state.CheckDeadLetter(d); err != nil {
		return err
	}
	if err := t.lockSpore(ctx, op, spore); err != nil {
		return err
	}
	t.wroteOutbox(spore)
	tag, err := t.tx.Exec(ctx, `UPDATE sporectl.outbox SET dead_at = $3, dead_reason = $4
		WHERE spore_id = $1 AND id = $2 AND dead_at IS NULL`, spore, entryID, d.At, d.Reason)
	if err != nil {
		return classify(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("queued message %s for %s: %w", entryID, spore, state.ErrNotFound)
	}
	return nil
}

func (t *tx) TokenHash(ctx context.Context, id string) (state.TokenHash, error) {
	if h, ok := t.tokens[id]; ok { // a View's read of its record brought it
		if h == nil {
			return "", fmt.Errorf("token of %s: %w", id, state.ErrNotFound)
		}
		return state.TokenHash(*h), nil
	}
	if err := t.lockInUpdate(ctx, "read token hash of "+id, id); err != nil {
		return "", err
	}
	var h string
	err := t.tx.QueryRow(ctx, `SELECT hash FROM sporectl.tokens WHERE spore_id = $1`, id).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("token of %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return "", classify("read token hash of "+id, err)
	}
	return state.TokenHash(h), nil
}

func (t *tx) SetTokenHash(ctx context.Context, id string, h state.TokenHash) error {
	op := "set token hash of " + id
	if err := t.writable(op); err != nil {
		return err
	}
	if !h.Valid() {
		// Never echo the value: it may be a plaintext token.
		return &state.InvalidError{Field: "token hash", Value: "(hidden)", Reason: "must be 64 lowercase hex digits (a SHA-256), not a token"}
	}
	if err := t.lockSpore(ctx, op, id); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO sporectl.tokens (spore_id, hash) VALUES ($1, $2)
		ON CONFLICT (spore_id) DO UPDATE SET hash = excluded.hash`, id, string(h))
	return classify(op, err)
}
