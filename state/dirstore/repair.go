package dirstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sporectl/sporectl/state"
)

// damagedDir holds what `sporectl repair` set aside (format §8): whole
// event logs that held damaged lines, rows of state.json that did not
// decode. Nothing in it is read by the store; it is kept for a person.
const damagedDir = "damaged"

// repairedAction is the lifecycle event a repair appends to the log it
// rebuilt; the views render a transcript whole again when they meet it.
const repairedAction = "repaired"

var _ state.Repairer = (*Store)(nil)

// Repair sets spore id's damaged data aside (docs/recovery.md, "A
// spore's stored data is damaged"), under the write lock and in one
// transaction:
//
//   - a row of state.json that does not decode: its line is saved to
//     damaged/, its event log copied there whole, and the spore removed
//     from the store (nothing of it can be trusted to rebuild a record),
//     compacted at once so that no line of state.json holds the row;
//   - an event log with damaged lines: the whole log is copied to
//     damaged/, then a new log is written with every intact line as it
//     was and, in each damaged line's place, a lifecycle event "damaged"
//     naming the copy (so every other line keeps its number), and a last
//     event "repaired"; the row names the new log and the old one is
//     removed once the transaction commits.
//
// Either way a damage mark a pass recorded is cleared. The copies are
// made durable before the transaction commits: a crash leaves either the
// store as it was (and a copy to spare) or the repair whole.
func (s *Store) Repair(ctx context.Context, id string, dryRun bool) (*state.RepairReport, error) {
	return state.RepairIn(ctx, s, id, dryRun, func(st state.Tx, rep *state.RepairReport) error {
		t := st.(*tx)
		r, found, err := t.get(id)
		if c, ok := state.SporeDamage(err); ok {
			return s.setRowAside(t, id, c, rep)
		}
		if err != nil {
			return err
		}
		if !found {
			return state.SporeNotFound(id)
		}
		return s.relog(ctx, t, r, rep)
	})
}

// setRowAside removes spore id, whose row does not decode, keeping its
// row's line and its event log under damaged/.
func (s *Store) setRowAside(t *tx, id string, c *state.CorruptError, rep *state.RepairReport) error {
	rep.Damage = append(rep.Damage, state.Problem{Where: c.Where(), Message: c.Reason})
	rep.Removed = true
	l, err := t.base.find(id)
	if err != nil || l == nil {
		// Only a row of the snapshot is read lazily; any other damage
		// is the store's as a whole.
		return c
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	if t.write {
		line := l.raw // the whole line, when its frame is the damage
		if line == nil {
			line = l.data
		}
		p, err := s.saveAside(damagedDir, snapshotFile+"."+id+"."+stamp, append(append([]byte{}, line...), '\n'))
		if err != nil {
			return err
		}
		rep.SetAside = append(rep.SetAside, rel(s.root, p))
	} else {
		rep.SetAside = append(rep.SetAside, damagedDir+"/"+snapshotFile+"."+id+"."+stamp)
	}
	if l.log != "" {
		if lp, name, err := s.logPath(id, l.log); err == nil {
			data, err := readFileNoFollow(lp, name, 0)
			switch {
			case errors.Is(err, os.ErrNotExist):
			case err != nil:
				return fmt.Errorf("copy %s aside: %w", name, err)
			case t.write:
				p, err := s.saveAside(damagedDir, l.log+"."+stamp, data)
				if err != nil {
					return err
				}
				rep.SetAside = append(rep.SetAside, rel(s.root, p))
				t.removed = append(t.removed, logRef{id, l.log})
			default:
				rep.SetAside = append(rep.SetAside, damagedDir+"/"+l.log+"."+stamp)
			}
		}
	}
	if t.write {
		if t.rows == nil {
			t.rows = map[string]*row{}
		}
		t.rows[id] = nil
		delete(t.pending, id)
		t.compact = true
	}
	return nil
}

// relog rebuilds spore r's event log when lines of its committed part do
// not read, and clears a damage mark when nothing (or nothing more) is
// damaged.
func (s *Store) relog(ctx context.Context, t *tx, r *row, rep *state.RepairReport) error {
	id := r.Spore.ID
	p, name, err := s.logPath(id, r.Log.File)
	if err != nil {
		return err
	}
	var data []byte
	if r.Log.Size > 0 || r.Log.LastSeq > 0 {
		data, err = readFileNoFollow(p, name, 0)
		if errors.Is(err, os.ErrNotExist) {
			data, err = nil, nil
		}
		if c, ok := state.SporeDamage(err); ok {
			return c // a link or a special file: not for a repair to touch
		}
		if err != nil {
			return ioErr("read "+name, err)
		}
	}
	evs, damage := salvage(name, data, r.Log)
	rep.Damage = append(rep.Damage, damage...)
	sp := r.Spore
	mark := sp.HealthReason == state.ReasonStoreDamage
	if len(damage) == 0 {
		if mark && t.write {
			rep.Cleared = true
			return s.clearMark(ctx, t, sp, "repaired: nothing of its record or log is damaged now; the damage mark is cleared")
		}
		rep.Cleared = mark
		rep.Kept = len(evs)
		return nil
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	aside := damagedDir + "/" + r.Log.File + "." + stamp
	if t.write {
		got, err := s.saveAside(damagedDir, r.Log.File+"."+stamp, data)
		if err != nil {
			return err
		}
		aside = rel(s.root, got)
	}
	rep.SetAside = append(rep.SetAside, aside)
	out := make([]state.Event, 0, len(evs)+1)
	for i, e := range evs {
		if e.Kind != "" {
			rep.Kept++
			out = append(out, e)
			continue
		}
		rep.Replaced++
		out = append(out, state.Event{Kind: state.KindLifecycle, Action: "damaged",
			Text: fmt.Sprintf("line %d of %s could not be read (%s); its bytes are kept in %s", i+1, name, e.Text, aside)})
	}
	rep.Cleared = mark
	if !t.write {
		return nil
	}
	out = append(out, state.Event{Kind: state.KindLifecycle, Action: repairedAction,
		Text: fmt.Sprintf("repaired: %d damaged line(s) of %s replaced by a marker each, %d intact kept; the old log is kept in %s", rep.Replaced, name, rep.Kept, aside)})
	// The new log carries this transaction's id, as a created spore's
	// does: the row names it at the commit point, and the old one goes
	// once the commit stands (it is copied aside already).
	n := *r
	n.Log = logHead{File: logFileName(id, t.txid)}
	t.put(&n)
	delete(t.pending, id)
	t.removed = append(t.removed, logRef{id, r.Log.File})
	if _, err := t.Append(ctx, id, out); err != nil {
		return fmt.Errorf("write the repaired log: %w", err)
	}
	if mark {
		return s.clearMark(ctx, t, sp, "")
	}
	return nil
}

// clearMark clears sp's damage mark (its recorded health), so the next
// pass judges it afresh; text, when set, is appended as its event.
func (s *Store) clearMark(ctx context.Context, t *tx, sp state.Spore, text string) error {
	if _, err := state.UpdateStatus(ctx, t, sp.ID, func(_ state.Spore, st *state.Status) error {
		st.Health, st.HealthReason = "", ""
		return nil
	}); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	_, err := t.Append(ctx, sp.ID, []state.Event{{Kind: state.KindLifecycle, Action: repairedAction, Text: text}})
	return err
}

// salvage reads the committed part of an event log line by line: each
// line that reads is its event; each one that does not is a zero event
// (Kind "") whose Text says what was wrong, and a damage of the report.
// Lines the head counts but the file lacks are damaged too. A line must
// hold its own seq (format §4), so a line lost from the middle makes
// every one after it damaged: nothing is renumbered.
func salvage(name string, data []byte, head logHead) ([]state.Event, []state.Problem) {
	var evs []state.Event
	var damage []state.Problem
	bad := func(seq uint64, why string) {
		evs = append(evs, state.Event{Text: why})
		damage = append(damage, state.Problem{Where: name + ":" + strconv.FormatUint(seq, 10), Message: why})
	}
	committed := data
	if int64(len(committed)) > head.Size {
		committed = committed[:head.Size]
	}
	for seq := uint64(1); len(committed) > 0 && seq <= head.LastSeq; seq++ {
		nl := bytes.IndexByte(committed, '\n')
		if nl < 0 {
			bad(seq, "committed part ends inside the line")
			break
		}
		e, why := decodeEventLine(committed[:nl], seq)
		committed = committed[nl+1:]
		if why != "" {
			bad(seq, why)
			continue
		}
		evs = append(evs, e)
	}
	for seq := uint64(len(evs)) + 1; seq <= head.LastSeq; seq++ {
		bad(seq, "missing: the log ends before it")
	}
	if len(committed) > 0 && uint64(len(evs)) >= head.LastSeq {
		damage = append(damage, state.Problem{Where: name, Message: fmt.Sprintf("%d committed bytes after its last event", len(committed))})
	}
	return evs, damage
}
