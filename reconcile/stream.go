package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// The streamed pass (docs/performance.md "The fleet pass at 10,000,
// streamed"): `status` over the whole fleet reads, judges and hands on
// its spores one at a time, so that 10,000 records, plans and rows are
// never held at once. It is Run(Options{}) — no ids, nothing acted on,
// delivered or projected — for a fleet in which that pass would write
// nothing: what it hands on is then, row for row, Run's Result. The
// moment it finds something Run would record (a bridge to ask and read
// lines from, a health to record, a damaged record, an observation that
// failed) it stops with ErrNotQuiet, and the caller drops what it was
// handed and runs Run, which records it: the streamed pass never writes.

// ErrNotQuiet is the streamed pass's answer for a fleet with something a
// pass records: run Run instead.
var ErrNotQuiet = errors.New("the fleet has something a pass records: run the whole pass")

// Streamed is what a streamed pass saw beside the rows it handed on.
type Streamed struct {
	// Orphans are as Result.Orphans.
	Orphans []string
	// Spores counts the rows handed on, Attention those of them whose
	// effective health needs attention (not policy.OK).
	Spores, Attention int
	// Fleet is the runtime's look at the fleet, when one was made: with
	// ErrNotQuiet, the whole pass takes it (Options.Looked) instead of
	// asking the runtime again.
	Fleet *FleetObservation
}

// sporeRanger is a transaction that reads the fleet's rows one at a
// time, keeping none (state/dirstore's RangeSpores). A store without it
// is read whole (Spores, Heads, Pending, DeadLetterCounts), and judged
// one spore at a time all the same.
type sporeRanger interface {
	RangeSpores(ctx context.Context, fn func(*state.SporeRow) error) error
}

// sporeFn is what rangeSpores hands on of each spore: its record, its
// log's head, its outbox's queued entries and how many dead letters it
// holds.
type sporeFn func(sp *state.Spore, head state.SporeHead, pending []state.OutboxEntry, dead int) error

// Stream runs the streamed pass: emit gets each spore's row in id order
// (it must not keep the pointer). ErrNotQuiet: see above; emit may have
// been called for some spores already.
func (ps *Pass) Stream(ctx context.Context, emit func(*SporeHealth) error) (Streamed, error) {
	now := ps.now()
	var out Streamed
	err := ps.Store.View(ctx, func(tx state.Tx) error {
		out = Streamed{}
		settings, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		// Observed inside the read: the directory store's View is a
		// snapshot that holds nothing; on PostgreSQL it is a read
		// transaction held open for the runtime's one look.
		fleet, looked, err := ps.lookQuietly(ctx, settings)
		if looked {
			out.Fleet = &fleet
		}
		if err != nil {
			return err
		}
		facts, err := gatherFleet(ctx, tx, settings, now)
		if err != nil {
			return err
		}
		in := PlanInput{Now: now, Policy: settings.Recovery.WithDefaults(), Settings: settings}
		// The ids the runtime holds something running of that are the
		// store's: what is left of them are the orphans.
		running := map[string]bool{}
		var p SporePlan
		err = rangeSpores(ctx, tx, func(sp *state.Spore, head state.SporeHead, pending []state.OutboxEntry, dead int) error {
			po, ok := fleet.Spores[sp.ID]
			if ok && po.State != PodAbsent {
				running[sp.ID] = true
			}
			o, _ := podObserved(po, ok)
			o.display()
			in.Spends = policy.CountSpends([]state.Spore{*sp}, nil, settings, now, nil)
			in.Spends.Colony = facts.colony
			p = SporePlan{}
			planSpore(&p, sp, o, in)
			if p.changes(now) {
				return ErrNotQuiet
			}
			h := sporeHealth(&p, head.LastSeq, pending, dead, settings, in.Spends)
			if rs := facts.runs[sp.ID]; len(rs) > 0 {
				next := rs[0].Next
				h.NextSchedule = &next
			}
			out.Spores++
			if !policy.OK(h.Effective) {
				out.Attention++
			}
			return emit(&h)
		})
		if err != nil {
			return err
		}
		out.Orphans = orphansIn(fleet, func(id string) bool { return running[id] })
		return nil
	})
	return out, err
}

// lookQuietly is the runtime's one look at the fleet, for a streamed
// pass (looked: it was made): ErrNotQuiet when the runtime cannot be
// built or observed (Run judges every spore Suspect then) or holds a
// running spore whose bridge a pass asks (ready, or started and not
// ready yet), and whose lines it ingests.
func (ps *Pass) lookQuietly(ctx context.Context, settings state.Settings) (fleet FleetObservation, looked bool, err error) {
	rt, err := ps.Runtime(ctx, settings)
	if err != nil {
		return FleetObservation{}, false, ErrNotQuiet
	}
	fleet, err = rt.Observe(ctx, nil)
	if err != nil {
		if ctx.Err() != nil {
			return FleetObservation{}, false, ctx.Err()
		}
		return FleetObservation{}, false, ErrNotQuiet
	}
	for _, po := range fleet.Spores {
		if _, ask := podObserved(po, true); ask != askNot {
			return fleet, true, ErrNotQuiet
		}
	}
	return fleet, true, nil
}

// fleetFacts are what judging one spore needs of the others: its
// colony's spend, when the colony has a budget (summed over all its
// spores, as CountSpends sums it), and the next run of each schedule,
// by target (resolved among the spores of its colony, as NextRuns).
type fleetFacts struct {
	colony map[string]state.Spend
	runs   map[string][]ScheduleRun
}

// gatherFleet reads the facts in a first range over the records, only
// when a colony has a budget or a schedule; it keeps of each record what
// the facts need (a schedule's target: its id, colony, swarm and role).
func gatherFleet(ctx context.Context, tx state.Tx, settings state.Settings, now time.Time) (fleetFacts, error) {
	var f fleetFacts
	if settings.Colonies == nil {
		return f, nil
	}
	budgeted, scheduled := map[string]bool{}, map[string]bool{}
	for name, c := range *settings.Colonies {
		budgeted[name] = !c.Budget.IsZero()
		scheduled[name] = len(c.Schedules) > 0
	}
	var targets []state.Spore
	err := rangeSpores(ctx, tx, func(sp *state.Spore, _ state.SporeHead, _ []state.OutboxEntry, _ int) error {
		if budgeted[sp.Colony] {
			if f.colony == nil {
				f.colony = map[string]state.Spend{}
			}
			f.colony[sp.Colony] = f.colony[sp.Colony].Add(policy.SpendOf(*sp, settings, now, state.Spend{}))
		}
		if scheduled[sp.Colony] {
			targets = append(targets, state.Spore{Wish: state.Wish{ID: sp.ID, Colony: sp.Colony, Swarm: sp.Swarm, Role: sp.Role}})
		}
		return nil
	})
	if err != nil {
		return f, err
	}
	f.runs = runsByTarget(settings, targets, now)
	return f, nil
}

// rangeSpores calls fn with every spore of tx, in id order: one at a
// time from a store that reads them so (sporeRanger), else from one whole
// read. A damaged record, which a whole pass judges alone, ends it with
// ErrNotQuiet.
func rangeSpores(ctx context.Context, tx state.Tx, fn sporeFn) error {
	var err error
	if r, ok := tx.(sporeRanger); ok {
		err = r.RangeSpores(ctx, func(row *state.SporeRow) error {
			var pending []state.OutboxEntry
			dead := 0
			for _, e := range row.Outbox {
				if e.Dead != nil {
					dead++
				} else {
					pending = append(pending, e)
				}
			}
			return fn(row.Spore, row.Head, pending, dead)
		})
	} else {
		err = rangeWhole(ctx, tx, fn)
	}
	if _, damaged := state.SporeDamage(err); damaged {
		return ErrNotQuiet
	}
	return err
}

// rangeWhole is rangeSpores over one whole read of tx.
func rangeWhole(ctx context.Context, tx state.Tx, fn sporeFn) error {
	all, err := tx.Spores(ctx)
	if err != nil {
		return damageIsNotQuiet(err)
	}
	heads, err := tx.Heads(ctx)
	if err != nil {
		return damageIsNotQuiet(err)
	}
	pending, err := tx.Pending(ctx)
	if err != nil {
		return damageIsNotQuiet(err)
	}
	dead, err := tx.DeadLetterCounts(ctx)
	if err != nil {
		return err
	}
	for i := range all {
		id := all[i].ID
		if err := fn(&all[i], heads[id], pending[id], dead[id]); err != nil {
			return err
		}
	}
	return nil
}

// damageIsNotQuiet is err, or ErrNotQuiet when it names damaged spores
// (state.DamagedError): a whole pass judges them alone.
func damageIsNotQuiet(err error) error {
	if dmg, err2 := state.Damaged(err); err2 == nil && len(dmg) > 0 {
		return ErrNotQuiet
	}
	return err
}
