package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// damagedTable holds what `sporectl repair` set aside (migration 0012):
// whole rows, as to_jsonb, never read by the store and never deleted.
const damagedTable = "sporectl.damaged"

// repairedAction is the lifecycle event a repair appends; the views render
// a transcript whole again when they meet it (as for the directory store).
const repairedAction = "repaired"

// repairPage is how many event rows a repair reads at a time: a log is
// walked in pages so that its length does not decide the memory used.
const repairPage = 2000

var _ state.Repairer = (*Store)(nil)

// Repair sets spore id's damaged rows aside (docs/recovery.md, "A spore's
// stored data is damaged"), in one transaction holding the spore-set lock
// and the spore's row:
//
//   - a spore row that does not read: the row, its events, outbox and
//     token rows are copied into sporectl.damaged and the spore is
//     deleted (nothing of it can be trusted to rebuild a record);
//   - event rows of a readable spore that do not read (an unknown kind, a
//     negative bridge_seq, an action, sender or text that is not UTF-8, a
//     line that is not JSON: what check names): each is copied into
//     sporectl.damaged and replaced in place, same seq, by a lifecycle
//     event "damaged" naming the copy, so every other event keeps its
//     number; then a "repaired" event is appended.
//
// Either way a damage mark a pass recorded is cleared. With dryRun it runs
// in a View and writes nothing.
func (s *Store) Repair(ctx context.Context, id string, dryRun bool) (*state.RepairReport, error) {
	return state.RepairIn(ctx, s, id, dryRun, func(st state.Tx, rep *state.RepairReport) error {
		t := st.(*tx)
		// The set lock first (the lock order): a spore set aside is
		// deleted, and DeleteSpore takes it.
		if err := t.lockSporeSet(ctx); err != nil {
			return err
		}
		sp, err := t.Spore(ctx, id)
		if c, ok := state.SporeDamage(err); ok {
			return t.setSporeAside(ctx, id, c, rep)
		}
		if err != nil {
			return err
		}
		return t.repairEvents(ctx, sp, rep)
	})
}

// setSporeAside copies spore id's row, whose values do not read, and every
// row that belongs to it into sporectl.damaged, then deletes the spore. It
// works on the raw rows: the spore row cannot be decoded.
func (t *tx) setSporeAside(ctx context.Context, id string, c *state.CorruptError, rep *state.RepairReport) error {
	op := "set spore " + id + " aside"
	rep.Damage = append(rep.Damage, state.Problem{Where: c.Where(), Message: c.Reason})
	rep.Removed = true
	for _, from := range []struct{ table, key, order string }{
		{"spores", "id", "id"},
		{"events", "spore_id", "seq"},
		{"outbox", "spore_id", "pos"},
		{"tokens", "spore_id", "spore_id"},
	} {
		// table, key and order come from the fixed list above, never
		// from input.
		src := "sporectl." + from.table
		var n, lo, hi int64
		if t.readOnly {
			err := t.tx.QueryRow(ctx, `SELECT count(*) FROM `+src+` WHERE `+from.key+` = $1`, id).Scan(&n)
			if err != nil {
				return classify(op, err)
			}
		} else {
			err := t.tx.QueryRow(ctx, `WITH ins AS (
					INSERT INTO `+damagedTable+` (at, spore_id, what, detail, data)
					SELECT transaction_timestamp(), $1, $2, $3, to_jsonb(r) FROM `+src+` r
					WHERE r.`+from.key+` = $1 ORDER BY r.`+from.order+` RETURNING id)
				SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM ins`,
				id, src, "the spore row does not read: "+c.Reason).Scan(&n, &lo, &hi)
			if err != nil {
				return classify(op, err)
			}
		}
		if n > 0 {
			rep.SetAside = append(rep.SetAside, asideName(lo, hi, n, src))
		}
	}
	if t.readOnly {
		return nil
	}
	return t.DeleteSpore(ctx, id)
}

// asideName names rows of sporectl.damaged in a report: "table
// sporectl.damaged id=7 (1 row of sporectl.spores)"; without ids (a dry
// run) the rows it would hold.
func asideName(lo, hi, n int64, src string) string {
	rows := fmt.Sprintf("%d row(s) of %s", n, src)
	switch {
	case lo == 0:
		return fmt.Sprintf("table %s (%s)", damagedTable, rows)
	case lo == hi:
		return fmt.Sprintf("table %s id=%d (%s)", damagedTable, lo, rows)
	default:
		return fmt.Sprintf("table %s id=%d..%d (%s)", damagedTable, lo, hi, rows)
	}
}

// damagedEvent is one event row that does not read, and why.
type damagedEvent struct {
	seq int64
	why string
}

// repairEvents replaces the event rows of sp that do not read, and clears
// a damage mark when nothing (or nothing more) is damaged.
func (t *tx) repairEvents(ctx context.Context, sp state.Spore, rep *state.RepairReport) error {
	id := sp.ID
	bad, kept, err := t.findDamagedEvents(ctx, id)
	if err != nil {
		return err
	}
	rep.Kept = kept
	mark := sp.HealthReason == state.ReasonStoreDamage
	rep.Cleared = mark
	for _, d := range bad {
		rep.Damage = append(rep.Damage, state.Problem{Where: fmt.Sprintf("sporectl.events spore_id=%s seq=%d", id, d.seq), Message: d.why})
	}
	if len(bad) == 0 {
		if !mark || t.readOnly {
			return nil
		}
		return t.clearMark(ctx, sp, "repaired: nothing of its record or events is damaged now; the damage mark is cleared")
	}
	rep.Replaced = len(bad)
	if t.readOnly {
		rep.SetAside = append(rep.SetAside, asideName(0, 0, int64(len(bad)), "sporectl.events"))
		return nil
	}
	op := "replace damaged events of " + id
	var lo, hi int64
	for _, d := range bad {
		var did int64
		err := t.tx.QueryRow(ctx, `INSERT INTO `+damagedTable+` (at, spore_id, what, detail, data)
			SELECT transaction_timestamp(), $1, 'sporectl.events', $3, to_jsonb(e) FROM sporectl.events e
			WHERE e.spore_id = $1 AND e.seq = $2 RETURNING id`, id, d.seq, d.why).Scan(&did)
		if err != nil {
			return classify(op, err)
		}
		if lo == 0 {
			lo = did
		}
		hi = did
		text := fmt.Sprintf("event %d could not be read (%s); its row is kept in table %s id=%d", d.seq, d.why, damagedTable, did)
		// The original time stays: the log stays in time order.
		_, err = t.tx.Exec(ctx, `UPDATE sporectl.events SET kind = $3, action = $4, sender = '', body = $5,
			bridge_seq = 0, line = NULL WHERE spore_id = $1 AND seq = $2`,
			id, d.seq, string(state.KindLifecycle), []byte("damaged"), []byte(text))
		if err != nil {
			return classify(op, err)
		}
	}
	rep.SetAside = append(rep.SetAside, asideName(lo, hi, int64(len(bad)), "sporectl.events"))
	text := fmt.Sprintf("repaired: %d damaged event(s) replaced by a marker each, %d intact kept; the rows are kept in %s",
		len(bad), kept, asideName(lo, hi, int64(len(bad)), "sporectl.events"))
	return t.clearMark(ctx, sp, text)
}

// findDamagedEvents walks spore id's events in pages, in Go (a bytea's
// UTF-8 or JSON validity cannot be asked of SQL without failing the
// statement), and returns the rows that do not read and how many do.
func (t *tx) findDamagedEvents(ctx context.Context, id string) ([]damagedEvent, int, error) {
	op := "read events of " + id + " for repair"
	var bad []damagedEvent
	kept := 0
	after := int64(0)
	for {
		rows, err := t.tx.Query(ctx, `SELECT seq, kind, bridge_seq, action, sender, body, line FROM sporectl.events
			WHERE spore_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, id, after, repairPage)
		if err != nil {
			return nil, 0, classify(op, err)
		}
		n := 0
		for rows.Next() {
			var seq, bseq int64
			var kind string
			var action, sender, body, line []byte
			if err := rows.Scan(&seq, &kind, &bseq, &action, &sender, &body, &line); err != nil {
				rows.Close()
				return nil, 0, classify(op, err)
			}
			n++
			after = seq
			if why := eventDamage(kind, bseq, action, sender, body, line); len(why) > 0 {
				bad = append(bad, damagedEvent{seq: seq, why: strings.Join(why, "; ")})
			} else {
				kept++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, classify(op, err)
		}
		if n < repairPage {
			return bad, kept, nil
		}
	}
}

// eventDamage says what of an event row does not read (nothing: it
// reads), in the words check uses.
func eventDamage(kind string, bseq int64, action, sender, body, line []byte) []string {
	var why []string
	if !state.ValidKind(state.EventKind(kind)) {
		if len(kind) > 64 { // a damaged value may be long; the report names it, bounded
			kind = kind[:64] + "…"
		}
		why = append(why, fmt.Sprintf("unknown kind %q", kind))
	}
	if bseq < 0 {
		why = append(why, "negative bridge_seq")
	}
	if !utf8.Valid(action) || !utf8.Valid(sender) || !utf8.Valid(body) {
		why = append(why, "action, sender or text is not valid UTF-8")
	}
	if line != nil && !json.Valid(line) {
		why = append(why, "line is not valid JSON")
	}
	return why
}

// clearMark clears sp's damage mark (its recorded health), when it has
// one, so the next pass judges it afresh, and appends text as a
// "repaired" event.
func (t *tx) clearMark(ctx context.Context, sp state.Spore, text string) error {
	if sp.HealthReason == state.ReasonStoreDamage {
		if _, err := state.UpdateStatus(ctx, t, sp.ID, func(_ state.Spore, st *state.Status) error {
			st.Health, st.HealthReason = "", ""
			return nil
		}); err != nil {
			return err
		}
	}
	_, err := t.Append(ctx, sp.ID, []state.Event{{Kind: state.KindLifecycle, Action: repairedAction, Text: text}})
	if err != nil {
		return fmt.Errorf("record the repair: %w", err)
	}
	return nil
}
