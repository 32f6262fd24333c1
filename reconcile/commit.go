package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// changes reports whether recording p would write anything, judged on
// the snapshot's record. A pass whose plans all say no writes nothing at
// all: no transaction is opened.
func (p *SporePlan) changes(now time.Time) bool {
	if p.Unreadable {
		// Nothing to write it against: its record is the damage.
		return false
	}
	if len(p.Delivered) > 0 {
		return true
	}
	if p.Ingest == nil && !p.Start && !p.Stop && !p.OpenBreaker && !p.ClearFailures &&
		p.Verdict.Effective == p.Spore.Health && string(p.Verdict.Code) == p.Spore.HealthReason {
		// The common case, decided without building a record: nothing
		// happened and the health is the one recorded.
		return false
	}
	st, evs := p.record(p.Spore, now)
	return len(evs) > 0 || !st.Equal(p.Spore.Status)
}

// commit writes, in one transaction, everything the pass learned and did:
// ingested lines (with the activity they add), transition events, the
// status (crash bookkeeping, health) and delivered outbox entries. Each spore is re-read inside
// the transaction, so a wish that arrived after the snapshot is kept and
// judged (record), and a spore deleted meanwhile is skipped. then, when
// not nil, runs last inside the same transaction (the summons, which must
// be committed with the lines that raise them). It returns each spore's
// last seq.
func (ps *Pass) commit(ctx context.Context, plans []*SporePlan, now time.Time, then func(context.Context, state.Tx) error) (map[string]uint64, error) {
	var todo []*SporePlan
	for _, p := range plans {
		if p.changes(now) {
			todo = append(todo, p)
		}
	}
	last := map[string]uint64{}
	if len(todo) == 0 {
		return last, nil
	}
	err := ps.Store.Update(ctx, func(tx state.Tx) error {
		clear(last)
		var dead []buried
		for _, p := range todo {
			id := p.Spore.ID
			var evs []state.Event
			read := false
			_, err := state.UpdateStatus(ctx, tx, id, func(fresh state.Spore, st *state.Status) error {
				read = true
				var err error
				*st, evs = p.record(fresh, now)
				if st.BridgeSeq != fresh.BridgeSeq {
					// Lines are appended below: what they did is counted in
					// the same write (activity.go).
					st.Activity = addActivity(st.Activity, evs, now, p.Ingest.countOf)
				}
				evs, dead, err = p.settleDeliveries(ctx, tx, fresh, st, evs, dead, now)
				return err
			})
			if !read && errors.Is(err, state.ErrNotFound) {
				continue // deleted since the snapshot: nothing of it to keep
			}
			if _, ok := state.SporeDamage(err); ok && !read {
				// Damaged since the snapshot: the next pass judges it
				// alone; the others' records are still written.
				continue
			}
			if err != nil {
				return err
			}
			if len(evs) > 0 {
				got, err := tx.Append(ctx, id, evs)
				if err != nil {
					return err
				}
				last[id] = got[len(got)-1].Seq
			}
		}
		if err := deadLetterSummons(ctx, tx, dead, now); err != nil {
			return err
		}
		if then != nil {
			return then(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return last, nil
}

// settleDeliveries records, inside tx, what became of each entry act
// handed p's spore (fresh as read in tx): one refused for good is made a
// dead letter (its event, and its summons gathered in dead), one
// delivered is dequeued with its event and gives the spore work (st's
// ActiveAt). An entry an overlapping pass settled already is skipped. It
// returns evs and dead with what it added.
func (p *SporePlan) settleDeliveries(ctx context.Context, tx state.Tx, fresh state.Spore, st *state.Status, evs []state.Event, dead []buried, now time.Time) ([]state.Event, []buried, error) {
	id := fresh.ID
	for _, d := range p.Delivered {
		if d.Dead != "" {
			ev, ok, err := bury(ctx, tx, id, d, now)
			if err != nil {
				return evs, dead, err
			}
			if ok {
				evs = append(evs, ev)
				dead = append(dead, buried{spore: fresh, entry: d.Entry.ID, reason: d.Dead})
			}
			continue
		}
		if d.Err != nil {
			continue
		}
		err := tx.Dequeue(ctx, id, d.Entry.ID)
		switch {
		case err == nil:
			evs = append(evs, deliveredEvent(d, now))
			st.ActiveAt = now // given work: idle time starts over
			if d.Entry.OverBudget {
				// A person's decision: the turn it starts may call the
				// model over the budget (the gateway asks policy.Granted).
				st.GrantUntil = policy.Grant(now)
			}
		case !errors.Is(err, state.ErrNotFound):
			return evs, dead, err
		}
		// Not found: an overlapping pass dequeued it and said so.
	}
	return evs, dead, nil
}
