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
		if err := t.lockIDs(ctx, op, ids); err != nil {
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

// lockIDs locks, in one statement and in id order, the rows of the
// spores in sorted ids that the transaction does not hold yet; ids with
// no row lock nothing. With a row held already some may come out of
// order, so the statement only tries (rowsNowait), and a taken row
// restarts the transaction with them all taken first.
func (t *tx) lockIDs(ctx context.Context, op string, ids []string) error {
	want := t.notHeld(ids)
	if len(want) == 0 {
		return nil
	}
	rows, err := t.tx.Query(ctx, lastEventsLockQuery+t.rowsNowait(), want)
	if err != nil {
		return t.refuseRows(op, err, refuseIDs(want))
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return classify(op, err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		return t.refuseRows(op, err, refuseIDs(want))
	}
	t.tookAll(" FOR UPDATE", len(got), func(i int) string { return got[i] })
	return nil
}

// notHeld are the ids whose rows the transaction does not hold yet.
func (t *tx) notHeld(ids []string) []string {
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		if !t.held.ids[id] {
			want = append(want, id)
		}
	}
	return want
}

// refuseIDs is what a restart takes first when a lock of ids was refused.
func refuseIDs(ids []string) func(*lockSet) {
	return func(w *lockSet) {
		for _, id := range ids {
			w.addID(id)
		}
	}
}
