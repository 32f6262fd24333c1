package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// Upkeep is what a pass records before it plans, on the store's own
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
// Both are decided on the snapshot and redone on the record read again
// inside one read-write transaction, so passes that overlap record each
// wake and each due time once: the second finds the work done. The
// snapshot is then brought up to date, so plan and act see what was
// recorded. No transaction is opened when nothing is due.
//
// The [arch]'s automatic summons is recorded on the same pattern (one
// transaction re-reading the [arch]'s record) but is not upkeep: it is
// derived from the lines a pass ingests, so it runs after the commit
// (summons.go), not before the plan.

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

func (ps *Pass) upkeep(ctx context.Context, snap *Snapshot, opt Options, now time.Time) error {
	wake := opt.Heal && !opt.DryRun
	loop := opt.Deliver && !opt.DryRun
	var todo []int
	for i, sp := range snap.Spores {
		if wake && wish.ArchAsleep(sp) || loop && loopDue(sp, now) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	type done struct {
		sp      state.Spore
		entry   *state.OutboxEntry
		lastSeq uint64
	}
	var got map[int]done
	err := ps.Store.Update(ctx, func(tx state.Tx) error {
		got = map[int]done{}
		for _, i := range todo {
			id := snap.Spores[i].ID
			sp, err := tx.Spore(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				continue // deleted since the snapshot: the plan's start finds it gone
			}
			if err != nil {
				return err
			}
			d := done{}
			if wake {
				// The rule is wish's; it writes nothing when an
				// overlapping pass kept it already.
				if sp, d.lastSeq, err = wish.KeepArchOn(ctx, tx, sp, now); err != nil {
					return err
				}
			}
			if loop && loopDue(sp, now) {
				every := time.Duration(sp.Loop)
				e := state.OutboxEntry{ID: NewMessageID(), Spore: id, From: LoopFrom, Text: LoopText(every), At: now}
				if _, err := tx.Enqueue(ctx, e); err != nil {
					return err
				}
				if sp, err = state.UpdateStatus(ctx, tx, id, func(_ state.Spore, st *state.Status) error {
					st.LoopDue = NextLoopDue(st.LoopDue, every, now)
					return nil
				}); err != nil {
					return err
				}
				appended, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindMessage, Action: e.ID, From: LoopFrom, At: now, Text: e.Text}})
				if err != nil {
					return err
				}
				d.entry, d.lastSeq = &e, appended[len(appended)-1].Seq
			}
			// The record as written, or as an overlapping pass left it.
			d.sp = sp
			got[i] = d
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record upkeep (the [arch] always on, swarm loops): %w", err)
	}
	for i, d := range got {
		// The record as committed: its generation is the one the commit
		// will compare with.
		snap.Spores[i] = d.sp
		id := d.sp.ID
		if d.entry != nil {
			snap.Pending[id] = append(snap.Pending[id], *d.entry)
		}
		if d.lastSeq > 0 {
			if snap.Heads == nil {
				snap.Heads = map[string]state.SporeHead{}
			}
			snap.Heads[id] = state.SporeHead{LastSeq: d.lastSeq}
		}
	}
	return nil
}
