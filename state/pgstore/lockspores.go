package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

// LockSpores is a writer's opening (outbox.SendOnce locks the target it
// writes to and the sender it logs to): it takes the locks a send needs,
// in the store's order, and brings what the send reads next under them,
// in one round trip (a batch, with BEGIN when it is the transaction's
// first statement):
//
//  1. the settings row FOR SHARE, when nothing that comes after it in
//     the lock order is held yet (lockorder.go) and it was not read;
//  2. the rows of ids not held yet, in id order (lockRecordsQuery), with
//     their records and heads;
//  3. those spores' outboxes, queued and dead.
//
// The locks keep all three true until the transaction ends, so the
// reads that follow (Settings, Spore, Head, Outbox, DeadLetters) send
// nothing. Ids with no row lock and bring nothing. With a row held
// already some may come out of order: the statement only tries
// (rowsNowait), and a taken row restarts the transaction with them all
// taken first.
func (t *tx) LockSpores(ctx context.Context, ids []string) error {
	if t.readOnly || len(ids) == 0 {
		return nil
	}
	const op = "lock spores"
	want := t.notHeld(slices.Compact(slices.Sorted(slices.Values(ids))))
	if len(want) == 0 {
		return nil
	}
	settings := t.settings == nil && !t.held.settings && !t.held.settingsRead && !t.held.anyRow()
	b := &pgx.Batch{}
	if settings {
		b.Queue(`SELECT doc::text FROM sporectl.settings FOR SHARE`)
	}
	b.Queue(lockRecordsQuery+t.rowsNowait(), want)
	b.Queue(outboxesQuery, want)
	br := t.tx.SendBatch(ctx, b)
	defer br.Close()

	if settings {
		var doc []byte
		err := br.QueryRow().Scan(&doc)
		if errors.Is(err, pgx.ErrNoRows) {
			return corrupt("sporectl.settings", "singleton", "the settings row is missing")
		}
		if err != nil {
			return classify(op, err)
		}
		t.held.settingsRead = true
		var st state.Settings
		if json.Unmarshal(doc, &st) == nil {
			t.settings = &st // else Settings reads it again and says what is wrong
		}
	}
	got, err := t.lockRecords(br, op, want)
	if err != nil {
		return err
	}
	if err := t.readOutboxes(br, op, got); err != nil {
		return err
	}
	return classify(op, br.Close())
}

// lockRecordsQuery is lastEventsLockQuery bringing each locked row's
// record and head.
const lockRecordsQuery = `SELECT ` + sporeColumns + `, last_seq FROM sporectl.spores WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// outboxesQuery is the outbox of every spore in $1, queued and dead, in
// the order queued: outboxQuery without its spore row, which
// lockRecordsQuery has just locked.
const outboxesQuery = `SELECT spore_id, id, sender, body, at, wake, over_budget, dead_at, dead_reason FROM sporectl.outbox
	WHERE spore_id = ANY($1) ORDER BY spore_id, pos`

// lockRecords reads lockRecordsQuery's answer: the ids locked, each
// record kept for the next Spore of it (tx.prefetched).
func (t *tx) lockRecords(br pgx.BatchResults, op string, want []string) ([]string, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, t.refuseRows(op, err, refuseIDs(want))
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		last := int64(-1)
		sp, err := scanSpore(withLast{rows, &last, nil})
		if _, damaged := state.SporeDamage(err); damaged && sp.ID != "" {
			// Locked all the same; its own read says what is wrong.
			got = append(got, sp.ID)
			continue
		}
		if err != nil {
			return nil, sporeErr(op, err)
		}
		got = append(got, sp.ID)
		t.prefetch(sp, last)
	}
	if err := rows.Err(); err != nil {
		return nil, t.refuseRows(op, err, refuseIDs(want))
	}
	t.tookAll(" FOR UPDATE", len(got), func(i int) string { return got[i] })
	return got, nil
}

// readOutboxes reads outboxesQuery's answer into t.outboxes, for the
// spores locked (got): one with no rows has an empty outbox.
func (t *tx) readOutboxes(br pgx.BatchResults, op string, got []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(op, err)
	}
	defer rows.Close()
	read := map[string]outboxRows{}
	for rows.Next() {
		var spore string
		e, dead, _, err := scanEntry(rows, &spore)
		if err != nil {
			return classify(op, err)
		}
		o := read[spore]
		e.Spore = spore
		if dead {
			o.dead = append(o.dead, e)
		} else {
			o.queued = append(o.queued, e)
		}
		read[spore] = o
	}
	if err := rows.Err(); err != nil {
		return classify(op, err)
	}
	if t.outboxes == nil {
		t.outboxes = map[string]outboxRows{}
	}
	for _, id := range got {
		t.outboxes[id] = read[id]
	}
	return nil
}
