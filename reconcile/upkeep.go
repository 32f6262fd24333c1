package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// Upkeep is what a pass decides before it plans, on the store's own
// rules rather than on a person's wish (docs/architecture.md "The pass"):
//
//   - the [arch] mycologist is always on: a healing pass that finds it
//     with a desired state other than Running records desired Running (a
//     new generation, a "wake" event: the rule is wish.KeepArchOn's), so
//     the same pass starts it;
//   - a delivering pass that finds a spore's `swarm loop` due (LoopDue
//     reached, the spore awake) records one loop prompt in its log and
//     outbox and moves LoopDue to the first due time after now: missed
//     ticks are skipped, never sent in a burst.
//
// Both are decided on the snapshot right after it is loaded, and the
// snapshot shows them at once (the [arch] wished Running, the loop prompt
// queued and its next due time), so observe, plan and act work on what
// will be recorded: the same pass starts the [arch] and delivers the
// prompt. They are recorded with the rest of what the pass decided, in
// its one transaction before act (decided.go), each redone on the record
// read again there, so passes that overlap record each wake and each due
// time once: the second finds the work done, and a loop prompt it did
// not record is taken out of its plan before anything is delivered.
//
// The [arch]'s automatic summons is recorded on the same pattern (the
// [arch]'s record re-read in the transaction) but is not upkeep: it is
// derived from the lines a pass ingests, so it is recorded last inside
// the commit (summons.go), not before act.

// ArchFrom and LoopFrom are the senders upkeep records.
const (
	ArchFrom = wish.ArchFrom
	LoopFrom = "sporectl:swarm-loop"
)

// LoopMark starts every loop prompt.
const LoopMark = "[from swarm loop]"

// LoopText is the prompt a `swarm loop` sends every interval.
func LoopText(every time.Duration) string {
	return fmt.Sprintf("%s Your loop (every %s) is due: see what each teammate is doing (`mycologist spores`), who is stuck or idle, and steer them (`swarm tell ROLE \"…\"`, `swarm compact ROLE`). To end the loop: `swarm loop --stop`.",
		LoopMark, every)
}

// loopDue reports whether sp's loop prompt is due at now.
func loopDue(sp state.Spore, now time.Time) bool {
	return sp.Loop > 0 && !sp.LoopDue.IsZero() && !now.Before(sp.LoopDue) && sp.Desired == state.Running
}

// NextLoopDue is the first due time after now on due's schedule.
func NextLoopDue(due time.Time, every time.Duration, now time.Time) time.Time {
	if every <= 0 {
		return time.Time{}
	}
	switch {
	case due.IsZero():
		return now.Add(every)
	case due.After(now):
		return due
	}
	return due.Add((now.Sub(due)/every + 1) * every)
}

// upkept is one spore's upkeep, decided on the snapshot: wake is the
// [arch] found asleep, loop the prompt of a due `swarm loop` (nil when
// none). sp is its record as written, once recordUpkeep wrote it (or
// found an overlapping pass had); lastSeq the last event written.
type upkept struct {
	i       int // index in the snapshot's spores
	wake    bool
	loop    *state.OutboxEntry
	slots   []*slotted // scheduled prompts to it (schedule.go)
	sp      state.Spore
	written bool // the record was read again in the transaction
	queued  bool // loop was recorded
	lastSeq uint64
}

// upkeep decides what is due on the snapshot and shows it there, ahead
// of its record (recordUpkeep): the [arch] wished Running, so the plan
// starts it, and the loop prompt queued with the next due time, so the
// plan delivers it. Nothing is written here.
func (ps *Pass) upkeep(snap *Snapshot, opt Options, now time.Time) []*upkept {
	wake := opt.Heal && !opt.DryRun
	loop := opt.Deliver && !opt.DryRun
	var todo []*upkept
	for i, sp := range snap.Spores {
		woken, due := wake && wish.ArchAsleep(sp), loop && loopDue(sp, now)
		if !woken && !due {
			continue // the fleet, nearly always
		}
		u := &upkept{i: i, wake: woken}
		if u.wake {
			// As wish.KeepArchOn records it; the plan reads only this.
			sp.Desired = state.Running
		}
		if loop && loopDue(sp, now) { // on the [arch] as woken
			every := time.Duration(sp.Loop)
			u.loop = &state.OutboxEntry{ID: outbox.NewMessageID(), Spore: sp.ID, From: LoopFrom, Text: LoopText(every), At: now}
			sp.LoopDue = NextLoopDue(sp.LoopDue, every, now)
			snap.Pending[sp.ID] = append(snap.Pending[sp.ID], *u.loop)
		}
		snap.Spores[i] = sp
		todo = append(todo, u)
	}
	return todo
}

// recordUpkeep records, inside tx, each upkeep decided on the snapshot,
// on the spore's record read again: the [arch] kept on (wish.KeepArchOn,
// which writes nothing when an overlapping pass kept it already), the
// loop prompt queued with its event and the next due time when the loop
// is still due (an overlapping pass that prompted it moved LoopDue on).
func recordUpkeep(ctx context.Context, tx state.Tx, snap *Snapshot, todo []*upkept, now time.Time) error {
	for _, u := range todo {
		u.written, u.queued, u.lastSeq = false, false, 0
		id := snap.Spores[u.i].ID
		sp, err := tx.Spore(ctx, id)
		if errors.Is(err, state.ErrNotFound) {
			continue // deleted since the snapshot: the plan's start finds it gone
		}
		if err != nil {
			return err
		}
		if u.wake {
			// The rule is wish's.
			if sp, u.lastSeq, err = wish.KeepArchOn(ctx, tx, sp, now); err != nil {
				return err
			}
		}
		if e := u.loop; e != nil && loopDue(sp, now) {
			// The entry as planned, under its id: act delivers that text.
			every := time.Duration(sp.Loop)
			m := outbox.Message{To: id, From: LoopFrom, Kind: state.KindMessage, Text: e.Text, Verbatim: true}
			r, err := outbox.Record(ctx, tx, sp, m, e.ID, now)
			if err != nil {
				return err
			}
			if sp, err = state.UpdateStatus(ctx, tx, id, func(_ state.Spore, st *state.Status) error {
				st.LoopDue = NextLoopDue(st.LoopDue, every, now)
				return nil
			}); err != nil {
				return err
			}
			u.queued, u.lastSeq = true, r.Seq
		}
		if sp, err = recordSlots(ctx, tx, u, sp, now); err != nil {
			return err
		}
		// The record as written, or as an overlapping pass left it.
		u.sp, u.written = sp, true
	}
	return nil
}

// applyUpkeep brings the snapshot and the plans up to what recordUpkeep
// committed: each record as written (its generation is the one the
// commit compares with), its last event, and a loop prompt it did not
// record taken out of the queue and of what act delivers.
func applyUpkeep(snap *Snapshot, plans []*SporePlan, todo []*upkept) {
	if len(todo) == 0 {
		return
	}
	byID := make(map[string]*SporePlan, len(todo))
	for _, p := range plans {
		byID[p.Spore.ID] = p
	}
	for _, u := range todo {
		id := snap.Spores[u.i].ID
		p := byID[id]
		var drop []string
		if u.loop != nil && !u.queued {
			drop = append(drop, u.loop.ID)
		}
		for _, sl := range u.slots {
			if !sl.queued {
				drop = append(drop, sl.entry.ID)
			}
		}
		for _, e := range drop {
			snap.Pending[id] = without(snap.Pending[id], e)
			if p != nil {
				p.Deliver = without(p.Deliver, e)
			}
		}
		if !u.written {
			continue
		}
		snap.Spores[u.i] = u.sp
		if p != nil {
			p.Spore = u.sp
		}
		if u.lastSeq > 0 {
			if snap.Heads == nil {
				snap.Heads = map[string]state.SporeHead{}
			}
			snap.Heads[id] = state.SporeHead{LastSeq: u.lastSeq}
		}
	}
}

// without is es but for the entry id, in a list of its own (es may be
// the snapshot's).
func without(es []state.OutboxEntry, id string) []state.OutboxEntry {
	out := make([]state.OutboxEntry, 0, len(es))
	for _, e := range es {
		if e.ID != id {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
