package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sporectl/sporectl/state"
)

// copyThreshold is the batch size from which Append uses COPY; below it
// the events go as arrays in the statement that numbers them, one round
// trip with no COPY setup.
const copyThreshold = 64

var eventCopyColumns = []string{"spore_id", "seq", "at", "kind", "action", "sender", "body", "bridge_seq", "line"}

func (t *tx) Head(ctx context.Context, id string) (state.SporeHead, error) {
	if last, ok := t.seen[id]; ok && last >= 0 {
		return state.SporeHead{LastSeq: uint64(last)}, nil
	}
	if err := t.orderRow(ctx, "read head of "+id, id); err != nil {
		return state.SporeHead{}, err
	}
	var last int64
	err := t.tx.QueryRow(ctx, `SELECT last_seq FROM sporectl.spores WHERE id = $1`+t.lockClause(), id).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.SporeHead{}, state.SporeNotFound(id)
	}
	if err != nil {
		return state.SporeHead{}, classify("read head of "+id, err)
	}
	t.found(id, last)
	return state.SporeHead{LastSeq: uint64(last)}, nil
}

func (t *tx) Heads(ctx context.Context) (map[string]state.SporeHead, error) {
	lock := t.lockClause()
	if lock != "" {
		lock += t.rowsNowait()
	}
	all := func(w *lockSet) { w.all = true }
	rows, err := t.tx.Query(ctx, `SELECT id, last_seq FROM sporectl.spores ORDER BY id`+lock)
	if err != nil {
		return nil, t.refuseRows("read heads", err, all)
	}
	defer rows.Close()
	out := map[string]state.SporeHead{}
	var ids []string
	for rows.Next() {
		var id string
		var last int64
		if err := rows.Scan(&id, &last); err != nil {
			return nil, classify("read heads", err)
		}
		out[id] = state.SporeHead{LastSeq: uint64(last)}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, t.refuseRows("read heads", err, all)
	}
	t.tookAll(lock, len(ids), func(i int) string { return ids[i] })
	return out, nil
}

// Append reserves n sequence numbers by incrementing last_seq, which locks
// the spore row until the transaction ends: a concurrent appender waits
// for the commit (or rollback) and then increments the committed value, so
// numbers are gapless and never shared. Below copyThreshold events the
// reservation and the rows are one statement (appendQuery), one round
// trip; from it, the reservation, then COPY.
func (t *tx) Append(ctx context.Context, id string, evs []state.Event) ([]state.Event, error) {
	op := "append events for " + id
	if err := t.writable(op); err != nil {
		return nil, err
	}
	for i := range evs {
		if err := checkEvent(i, &evs[i]); err != nil {
			return nil, err
		}
	}
	if err := t.orderRow(ctx, op, id); err != nil {
		return nil, err
	}
	if len(evs) < copyThreshold {
		return t.appendSmall(ctx, op, id, evs)
	}
	// The same statement queues a notification on EventsChannel (notify.go)
	// naming the spore: Postgres delivers it when, and only if, the
	// transaction commits, so a listener that wakes finds the events.
	var last int64
	err := t.tx.QueryRow(ctx, `WITH u AS (UPDATE sporectl.spores SET last_seq = last_seq + $2 WHERE id = $1 RETURNING last_seq)
		SELECT last_seq, pg_notify('`+EventsChannel+`', $1)::text FROM u`,
		id, int64(len(evs))).Scan(&last, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, state.SporeNotFound(id)
	}
	if err != nil {
		return nil, classify(op, err)
	}
	now, err := t.txTime(ctx)
	if err != nil {
		return nil, err
	}
	out := stampEvents(evs, uint64(last), now)
	t.found(id, last)
	if err := t.copyEvents(ctx, id, out); err != nil {
		return nil, classify(op, err)
	}
	return out, nil
}

// appendQuery reserves $2 numbers of spore $1 and inserts its events,
// given as arrays, numbered in their order (WITH ORDINALITY); an event
// with no time gets the transaction's. It answers the last number and the
// transaction's time, and queues the notification (notify.go); no row
// when there is no such spore, and then nothing is inserted.
const appendQuery = `WITH u AS (
		UPDATE sporectl.spores SET last_seq = last_seq + $2 WHERE id = $1 RETURNING last_seq
	), ins AS (
		INSERT INTO sporectl.events (spore_id, seq, at, kind, action, sender, body, bridge_seq, line)
		SELECT $1, u.last_seq - $2 + e.i, coalesce(e.at, transaction_timestamp()), e.kind, e.action, e.sender, e.body, e.bridge_seq, e.line
		FROM u, unnest($3::timestamptz[], $4::text[], $5::bytea[], $6::bytea[], $7::bytea[], $8::bigint[], $9::bytea[])
			WITH ORDINALITY AS e(at, kind, action, sender, body, bridge_seq, line, i)
	)
	SELECT last_seq, transaction_timestamp(), pg_notify('` + EventsChannel + `', $1)::text FROM u`

// appendSmall is Append in one statement (appendQuery).
func (t *tx) appendSmall(ctx context.Context, op, id string, evs []state.Event) ([]state.Event, error) {
	n := len(evs)
	var (
		at                   = make([]pgtype.Timestamptz, n)
		kind                 = make([]string, n)
		action, sender, body = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		bridgeSeq            = make([]int64, n)
		line                 = make([][]byte, n)
	)
	for i := range evs {
		e := &evs[i]
		if ts := state.Stamp(e.At); !ts.IsZero() {
			at[i] = pgtype.Timestamptz{Time: ts, Valid: true}
		}
		kind[i] = string(e.Kind)
		action[i], sender[i], body[i] = []byte(e.Action), []byte(e.From), []byte(e.Text)
		bridgeSeq[i] = int64(e.BridgeSeq)
		if len(e.Line) > 0 {
			line[i] = []byte(e.Line)
		}
	}
	var (
		last int64
		now  time.Time
	)
	err := t.tx.QueryRow(ctx, appendQuery, id, int64(n), at, kind, action, sender, body, bridgeSeq, line).Scan(&last, &now, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, state.SporeNotFound(id)
	}
	if err != nil {
		return nil, classify(op, err)
	}
	if t.now.IsZero() {
		t.now = now.UTC()
	}
	t.found(id, last) // the row is held: its head stays last until COMMIT
	if n == 0 {
		return nil, nil
	}
	return stampEvents(evs, uint64(last), t.now), nil
}

// stampEvents is evs as stored: numbered up to last, each time stamped
// (the transaction's, now, for one that had none).
func stampEvents(evs []state.Event, last uint64, now time.Time) []state.Event {
	first := last - uint64(len(evs)) + 1
	out := make([]state.Event, len(evs))
	for i, e := range evs {
		e.Seq = first + uint64(i)
		e.At = state.Stamp(e.At)
		if e.At.IsZero() {
			e.At = state.Stamp(now)
		}
		out[i] = e
	}
	return out
}

func eventRow(id string, e *state.Event) []any {
	var line any
	if len(e.Line) > 0 {
		line = []byte(e.Line)
	}
	return []any{id, int64(e.Seq), e.At, string(e.Kind), []byte(e.Action), []byte(e.From), []byte(e.Text), int64(e.BridgeSeq), line}
}

func (t *tx) copyEvents(ctx context.Context, id string, evs []state.Event) error {
	_, err := t.tx.CopyFrom(ctx, pgx.Identifier{"sporectl", "events"}, eventCopyColumns,
		pgx.CopyFromSlice(len(evs), func(i int) ([]any, error) { return eventRow(id, &evs[i]), nil }))
	return err
}

const eventColumns = `seq, at, kind, action, sender, body, bridge_seq, line`

// The two reads of a log; both are range scans of the primary key
// (spore_id, seq), which TestLogReadsUseTheIndex checks with EXPLAIN.
const (
	eventsQuery = `SELECT ` + eventColumns + ` FROM sporectl.events
		WHERE spore_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	tailQuery = `SELECT ` + eventColumns + ` FROM sporectl.events
		WHERE spore_id = $1 ORDER BY seq DESC LIMIT $2`
)

// Events reads an index range (spore_id, seq > after), so its cost does not
// depend on how many events precede after.
func (t *tx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	op := "read events of " + id
	if err := t.lockInUpdate(ctx, op, id); err != nil {
		return nil, err
	}
	var lim any // NULL is LIMIT ALL
	if limit > 0 {
		lim = limit
	}
	rows, err := t.tx.Query(ctx, eventsQuery, id, int64(min(after, 1<<63-1)), lim)
	if err != nil {
		return nil, classify(op, err)
	}
	evs, err := scanEvents(id, rows)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		if err := t.sporeExists(ctx, op, id); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// Tail walks the primary key backwards from the end of the log.
func (t *tx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	op := "read tail of " + id
	if err := t.lockInUpdate(ctx, op, id); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, t.sporeExists(ctx, op, id)
	}
	rows, err := t.tx.Query(ctx, tailQuery, id, n)
	if err != nil {
		return nil, classify(op, err)
	}
	evs, err := scanEvents(id, rows)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		if err := t.sporeExists(ctx, op, id); err != nil {
			return nil, err
		}
	}
	slices.Reverse(evs)
	return evs, nil
}

func scanEvents(id string, rows pgx.Rows) ([]state.Event, error) {
	defer rows.Close()
	var out []state.Event
	for rows.Next() {
		var sc eventScan
		if err := rows.Scan(sc.dest()...); err != nil {
			return nil, classify("read events of "+id, err)
		}
		e, err := sc.event(id)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read events of "+id, err)
	}
	return out, nil
}

// eventScan is one row's eventColumns as scanned, for the reads that
// select them (after other columns, for LastEvents).
type eventScan struct {
	seq, bseq                  int64
	at                         time.Time
	kind                       string
	action, sender, body, line []byte
}

func (s *eventScan) dest() []any {
	return []any{&s.seq, &s.at, &s.kind, &s.action, &s.sender, &s.body, &s.bseq, &s.line}
}

// event is the scanned row as an event of spore id; a kind or bridge_seq
// the format does not allow is corruption.
func (s *eventScan) event(id string) (state.Event, error) {
	e := state.Event{Seq: uint64(s.seq), At: s.at.UTC(), Kind: state.EventKind(s.kind), BridgeSeq: uint64(s.bseq),
		Action: string(s.action), From: string(s.sender), Text: string(s.body)}
	if len(s.line) > 0 {
		e.Line = s.line
	}
	if !state.ValidKind(e.Kind) || s.bseq < 0 {
		return state.Event{}, corrupt("sporectl.events", fmt.Sprintf("spore_id=%s seq=%d", id, s.seq), "kind or bridge_seq out of range")
	}
	return e, nil
}
