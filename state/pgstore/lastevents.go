package pgstore

import (
	"context"
	"slices"

	"github.com/sporectl/sporectl/state"
)

// lastEventsQuery reads the last event of every spore in $1 in one
// statement: for each spores row the id names (a primary key lookup), one
// backward step along the events primary key (spore_id, seq), the plan
// of Tail with LIMIT 1. A missing spore has no spores row and one with an
// empty log no events row: both drop out of the CROSS JOIN. Its cost is
// two index probes per id, whatever the logs' lengths
// (TestLastEventsUsesTheIndex checks the plan with EXPLAIN).
const lastEventsQuery = `SELECT s.id, e.*
	FROM sporectl.spores s
	CROSS JOIN LATERAL (SELECT ` + eventColumns + ` FROM sporectl.events
		WHERE spore_id = s.id ORDER BY seq DESC LIMIT 1) e
	WHERE s.id = ANY($1)`

// lastEventsLockQuery locks the rows of the spores in $1 in id order
// (LockRows runs above the sort), as takeFirst does.
const lastEventsLockQuery = `SELECT id FROM sporectl.spores WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// LastEvents is one query over the spores named (lastEventsQuery). Inside
// an Update one statement first locks the rows of those not held yet, in
// id order, so what is read stays true until COMMIT, as Tail's lock does.
func (t *tx) LastEvents(ctx context.Context, ids []string) (map[string]state.Event, error) {
	const op = "read the last events of spores"
	out := map[string]state.Event{}
	if len(ids) == 0 {
		return out, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if !t.readOnly {
		if err := t.lockIDs(ctx, op, ids, false); err != nil {
			return nil, err
		}
	}
	rows, err := t.tx.Query(ctx, lastEventsQuery, ids)
	if err != nil {
		return nil, classify(op, err)
	}
	defer rows.Close()
	var dmg state.DamagedError
	for rows.Next() {
		var (
			id string
			sc eventScan
		)
		if err := rows.Scan(append([]any{&id}, sc.dest()...)...); err != nil {
			return nil, classify(op, err)
		}
		e, err := sc.event(id)
		if c, ok := state.SporeDamage(err); ok {
			dmg.Add(id, c) // its own damage: the others are read
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = e
	}
	if err := rows.Err(); err != nil {
		return nil, classify(op, err)
	}
	return out, dmg.OrNil()
}

// LockSpores locks the rows of ids not held yet, in id order, in one
// statement (lockIDs).
func (t *tx) LockSpores(ctx context.Context, ids []string) error {
	if t.readOnly || len(ids) == 0 {
		return nil
	}
	return t.lockIDs(ctx, "lock spores", slices.Compact(slices.Sorted(slices.Values(ids))), true)
}

// lockRecordsQuery is lastEventsLockQuery bringing each locked row's
// record and head: a writer locks the spores it writes and then reads
// the record of the one it writes to (outbox.SendOnce), and the lock it
// now holds keeps that record true, so the read needs no statement of
// its own (tx.prefetched).
const lockRecordsQuery = `SELECT ` + sporeColumns + `, last_seq FROM sporectl.spores WHERE id = ANY($1) ORDER BY id FOR UPDATE`

// lockIDs locks, in one statement and in id order, the rows of the
// spores in sorted ids that the transaction does not hold yet; ids with
// no row lock nothing. With a row held already some may come out of
// order, so the statement only tries (rowsNowait), and a taken row
// restarts the transaction with them all taken first. With records, the
// statement brings each row's record too, kept for the transaction's
// next read of it.
func (t *tx) lockIDs(ctx context.Context, op string, ids []string, records bool) error {
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		if !t.held.ids[id] {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	add := func(w *lockSet) {
		for _, id := range want {
			w.addID(id)
		}
	}
	query := lastEventsLockQuery
	if records {
		query = lockRecordsQuery
	}
	rows, err := t.tx.Query(ctx, query+t.rowsNowait(), want)
	if err != nil {
		return t.refuseRows(op, err, add)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		if !records {
			var id string
			if err := rows.Scan(&id); err != nil {
				return classify(op, err)
			}
			got = append(got, id)
			continue
		}
		last := int64(-1)
		sp, err := scanSpore(withLast{rows, &last, nil})
		if _, damaged := state.SporeDamage(err); damaged && sp.ID != "" {
			// Locked all the same; its read will say what is wrong.
			got = append(got, sp.ID)
			continue
		}
		if err != nil {
			return sporeErr(op, err)
		}
		got = append(got, sp.ID)
		t.prefetch(sp, last)
	}
	if err := rows.Err(); err != nil {
		return t.refuseRows(op, err, add)
	}
	t.tookAll(" FOR UPDATE", len(got), func(i int) string { return got[i] })
	return nil
}
