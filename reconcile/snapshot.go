package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// Snapshot is what a pass reads of the store, once, in one read-only
// transaction: nothing later in the pass reads the store again until the
// commit, which re-checks what it writes over.
type Snapshot struct {
	Settings state.Settings
	// Spores are the spores the pass covers, by id order.
	Spores []state.Spore
	// Known is every id in the store (orphans are told apart by it), for
	// a pass over the whole fleet; a pass over named spores tells no
	// orphans, and reads no other spore's id (Named).
	Known []string
	// Named: the pass covers the spores named, not the fleet.
	Named bool
	// All is every spore in the store, covered or not: a colony's
	// budget is judged on all its spores (budget.go).
	All   []state.Spore
	Heads map[string]state.SporeHead
	// Pending is every covered spore's undelivered outbox, in queue order.
	Pending map[string][]state.OutboxEntry
	// Dead is how many dead letters each covered spore that has any
	// holds (a pass over the fleet: one read of every spore's count).
	Dead map[string]int
	// Missing are named ids that are not in the store.
	Missing []error
	// Damaged are covered spores whose stored record could not be read
	// (state.DamagedError): each is in Spores as its id alone, judged
	// Error with its damage named, and nothing of it is written.
	Damaged map[string]*state.CorruptError
}

// namedReads is how many named spores Load reads one by one; a pass over
// more reads the whole fleet at once (on PostgreSQL each read by id is a
// round trip, and a few whole-table reads cost less than thousands).
const namedReads = 64

// Load reads the snapshot. With ids, only those spores are covered (the
// missing ones are listed, not fatal); without, the whole fleet. A pass
// over up to namedReads named spores reads their records, heads and
// outboxes by id and nothing of the rest of the fleet, so that a command
// about one spore costs the same in a fleet of 10,000; it reads every
// record only when a covered spore's colony has a budget, which is judged
// on all the colony's spores (budget.go).
func Load(ctx context.Context, st state.Store, ids []string) (*Snapshot, error) {
	snap := &Snapshot{}
	err := st.View(ctx, func(tx state.Tx) error {
		var err error
		if snap.Settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		if len(ids) > 0 && len(ids) <= namedReads {
			return snap.loadNamed(ctx, tx, ids)
		}
		if snap.Dead, err = tx.DeadLetterCounts(ctx); err != nil {
			return err
		}
		all, err := tx.Spores(ctx)
		if snap.Damaged, err = state.Damaged(err); err != nil {
			return err
		}
		snap.All = all
		snap.Known = make([]string, 0, len(all)+len(snap.Damaged))
		for _, s := range all {
			snap.Known = append(snap.Known, s.ID)
		}
		if len(snap.Damaged) > 0 {
			// A damaged spore is still the store's: its pod is no orphan.
			snap.Known = append(snap.Known, sortedKeys(snap.Damaged)...)
			slices.Sort(snap.Known)
		}
		if len(ids) == 0 {
			snap.Spores = withDamaged(all, snap.Damaged)
		} else {
			snap.pick(ids)
		}
		// A damaged spore's head and outbox are left out (its record is
		// its own damage, already named).
		heads, err := tx.Heads(ctx)
		if _, err = state.Damaged(err); err != nil {
			return err
		}
		snap.Heads = heads
		pending, err := tx.Pending(ctx)
		if _, err = state.Damaged(err); err != nil {
			return err
		}
		snap.Pending = make(map[string][]state.OutboxEntry)
		for _, s := range snap.Spores {
			if p := pending[s.ID]; len(p) > 0 {
				snap.Pending[s.ID] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// pick covers the named spores of snap.All, each once, in the order
// named. Their index is of positions in All, not copies of the spores: a
// record is a few hundred bytes, and a copy of the fleet's is what a
// whole read must not pay twice.
func (snap *Snapshot) pick(ids []string) {
	snap.Named = true
	at := make(map[string]int, len(snap.All))
	for i, s := range snap.All {
		at[s.ID] = i
	}
	seen := map[string]bool{}
	for _, id := range ids {
		i, ok := at[id]
		_, damaged := snap.Damaged[id]
		switch {
		case seen[id]:
			continue
		case damaged:
			seen[id] = true
			snap.Spores = append(snap.Spores, damagedSpore(id))
			continue
		case !ok:
			snap.Missing = append(snap.Missing, state.SporeNotFound(id))
			continue
		}
		seen[id] = true
		snap.Spores = append(snap.Spores, snap.All[i])
	}
}

// loadNamed is Load over a few named spores: each one's record, head and
// outbox by id, and every record only for a colony budget.
func (snap *Snapshot) loadNamed(ctx context.Context, tx state.Tx, ids []string) error {
	snap.named(len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		sp, err := tx.Spore(ctx, id)
		if errors.Is(err, state.ErrNotFound) {
			snap.Missing = append(snap.Missing, state.SporeNotFound(id))
			continue
		}
		if c, ok := state.SporeDamage(err); ok {
			// Its record is its own damage: judged alone, as a whole
			// read would leave it out (state.DamagedError).
			if snap.Damaged == nil {
				snap.Damaged = map[string]*state.CorruptError{}
			}
			snap.Damaged[id] = c
			snap.Spores = append(snap.Spores, damagedSpore(id))
			continue
		}
		if err != nil {
			return err
		}
		if err := snap.cover(ctx, tx, sp); err != nil {
			return err
		}
	}
	return snap.colonies(ctx, tx)
}

// LoadIn is Load over sp alone inside the caller's transaction, sp as
// the caller read it there: serve's delivery of a message reads its
// pass's snapshot in the transaction that recorded it
// (outbox.Once.Then), so the pass reads the target's record no more but
// in its commit.
func LoadIn(ctx context.Context, tx state.Tx, sp state.Spore) (*Snapshot, error) {
	snap := &Snapshot{}
	var err error
	if snap.Settings, err = tx.Settings(ctx); err != nil {
		return nil, err
	}
	snap.named(1)
	if err := snap.cover(ctx, tx, sp); err != nil {
		return nil, err
	}
	if err := snap.colonies(ctx, tx); err != nil {
		return nil, err
	}
	return snap, nil
}

// named makes snap one over n named spores.
func (snap *Snapshot) named(n int) {
	snap.Named = true
	snap.Heads = make(map[string]state.SporeHead, n)
	snap.Pending = make(map[string][]state.OutboxEntry)
	snap.Dead = map[string]int{}
}

// cover adds sp, as read in tx, to the spores snap covers, with its head,
// its outbox and its dead letters' count.
func (snap *Snapshot) cover(ctx context.Context, tx state.Tx, sp state.Spore) error {
	id := sp.ID
	snap.Spores = append(snap.Spores, sp)
	var err error
	if snap.Heads[id], err = tx.Head(ctx, id); err != nil {
		return err
	}
	p, err := tx.Outbox(ctx, id)
	if err != nil {
		return err
	}
	if len(p) > 0 {
		snap.Pending[id] = p
	}
	// Its own dead letters, not the fleet's count: on the directory
	// store that count reads the whole snapshot.
	dead, err := tx.DeadLetters(ctx, id)
	if err != nil {
		return err
	}
	if len(dead) > 0 {
		snap.Dead[id] = len(dead)
	}
	return nil
}

// colonies reads every record when a covered spore's colony has a
// budget, which is judged on all the colony's spores; otherwise the
// covered spores are all the pass counts.
func (snap *Snapshot) colonies(ctx context.Context, tx state.Tx) error {
	budgeted := false
	for _, sp := range snap.Spores {
		if _, damaged := snap.Damaged[sp.ID]; !damaged {
			budgeted = budgeted || !snap.Settings.Colony(sp.Colony).Budget.IsZero()
		}
	}
	if !budgeted {
		snap.All = snap.Spores
		return nil
	}
	var err error
	snap.All, err = tx.Spores(ctx)
	// Another colony member's damage leaves it out of the sum: it is
	// judged when a pass covers it.
	_, err = state.Damaged(err)
	return err
}

// damagedSpore stands for a spore whose record could not be read: its id
// is all that is known of it.
func damagedSpore(id string) state.Spore {
	return state.Spore{Wish: state.Wish{ID: id}}
}

// withDamaged is all with a stand-in for each damaged spore, in id order.
func withDamaged(all []state.Spore, damaged map[string]*state.CorruptError) []state.Spore {
	if len(damaged) == 0 {
		return all
	}
	out := make([]state.Spore, 0, len(all)+len(damaged))
	out = append(out, all...)
	for _, id := range sortedKeys(damaged) {
		out = append(out, damagedSpore(id))
	}
	slices.SortFunc(out, func(a, b state.Spore) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// IDs are the covered spores' ids.
func (s *Snapshot) IDs() []string {
	out := make([]string, len(s.Spores))
	for i, sp := range s.Spores {
		out[i] = sp.ID
	}
	return out
}

// ErrMissing joins the snapshot's missing ids, nil when none.
func (s *Snapshot) ErrMissing() error { return errors.Join(s.Missing...) }
