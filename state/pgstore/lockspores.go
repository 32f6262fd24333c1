package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

// LockSpores is a writer's opening (outbox.SendOnce locks the target it
// writes to and the sender it logs to): it takes the rows of ids not
// held yet, in id order, and brings what the send reads next under those
// locks, in one round trip (a batch, with BEGIN when it is the
// transaction's first statement): each row's record and head
// (lockRecordsQuery) and those spores' outboxes, queued and dead. The
// locks keep them true until the transaction ends, so the Spore, Head,
// Outbox and DeadLetters that follow send nothing. Ids with no row lock
// and bring nothing. With a row held already some may come out of
// order: the statement only tries (rowsNowait), and a taken row restarts
// the transaction with them all taken first.
//
// The settings are not taken here, though a send reads them: taken
// first, every send waiting for its sender's row lock would wait holding
// the settings row's share, and the tells of one sender ran slower so
// (docs/performance.md, "tell on PostgreSQL").
func (t *tx) LockSpores(ctx context.Context, ids []string) error {
	if t.readOnly || len(ids) == 0 {
		return nil
	}
	const op = "lock spores"
	want := t.notHeld(slices.Compact(slices.Sorted(slices.Values(ids))))
	if len(want) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(lockRecordsQuery+t.rowsNowait(), want)
	b.Queue(outboxesQuery, want)
	br := t.tx.SendBatch(ctx, b)
	defer br.Close()
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
