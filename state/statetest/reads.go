package statetest

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Reads wraps a store and counts what its transactions read: spore
// records (one per Spore found, one per record Spores returns; by id
// for Spore, RecordReads), reads of
// the whole fleet (Spores, Heads, Pending, DeadLetterCounts), and every read by method
// (Calls; each is one query on PostgreSQL), so a test can require that a
// command about named spores reads only theirs, or that a request costs
// the same round trips whatever the fleet.
type Reads struct {
	state.Store
	// Records is the spore records read; Fleet the whole-fleet reads.
	Records atomic.Int64
	Fleet   atomic.Int64
	// Views and Updates count the transactions (each a BEGIN and an end,
	// two round trips on PostgreSQL).
	Views, Updates atomic.Int64

	mu    sync.Mutex
	calls map[string]int
	byID  map[string]int
}

// Reset zeroes the counts.
func (r *Reads) Reset() {
	r.Records.Store(0)
	r.Fleet.Store(0)
	r.Views.Store(0)
	r.Updates.Store(0)
	r.TakeCalls()
	r.mu.Lock()
	r.byID = nil
	r.mu.Unlock()
}

// RecordReads is how many times id's record was read by id (Spore) since
// the last Reset: what a command about one spore pays for it, whole-fleet
// reads apart (Fleet).
func (r *Reads) RecordReads(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// TakeCalls returns the reads by method since the last take, and zeroes them.
func (r *Reads) TakeCalls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := maps.Clone(r.calls)
	r.calls = nil
	return out
}

func (r *Reads) call(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[method]++
}

func (r *Reads) View(ctx context.Context, fn func(state.Tx) error) error {
	r.Views.Add(1)
	return r.Store.View(ctx, func(tx state.Tx) error { return fn(&readsTx{Tx: tx, r: r}) })
}

func (r *Reads) Update(ctx context.Context, fn func(state.Tx) error) error {
	r.Updates.Add(1)
	return r.Store.Update(ctx, func(tx state.Tx) error { return fn(&readsTx{Tx: tx, r: r}) })
}

type readsTx struct {
	state.Tx
	r *Reads
}

func (t *readsTx) Settings(ctx context.Context) (state.Settings, error) {
	t.r.call("Settings")
	return t.Tx.Settings(ctx)
}

func (t *readsTx) Spore(ctx context.Context, id string) (state.Spore, error) {
	t.r.call("Spore")
	sp, err := t.Tx.Spore(ctx, id)
	if err == nil {
		t.r.Records.Add(1)
		t.r.mu.Lock()
		if t.r.byID == nil {
			t.r.byID = map[string]int{}
		}
		t.r.byID[id]++
		t.r.mu.Unlock()
	}
	return sp, err
}

func (t *readsTx) Spores(ctx context.Context) ([]state.Spore, error) {
	t.r.call("Spores")
	all, err := t.Tx.Spores(ctx)
	t.r.Fleet.Add(1)
	t.r.Records.Add(int64(len(all)))
	return all, err
}

func (t *readsTx) Heads(ctx context.Context) (map[string]state.SporeHead, error) {
	t.r.call("Heads")
	t.r.Fleet.Add(1)
	return t.Tx.Heads(ctx)
}

func (t *readsTx) Pending(ctx context.Context) (map[string][]state.OutboxEntry, error) {
	t.r.call("Pending")
	t.r.Fleet.Add(1)
	return t.Tx.Pending(ctx)
}

// DeadLetterCounts is a read of the whole fleet: a command about named
// spores reads their own dead letters instead.
func (t *readsTx) DeadLetterCounts(ctx context.Context) (map[string]int, error) {
	t.r.call("DeadLetterCounts")
	t.r.Fleet.Add(1)
	return t.Tx.DeadLetterCounts(ctx)
}

func (t *readsTx) Head(ctx context.Context, id string) (state.SporeHead, error) {
	t.r.call("Head")
	return t.Tx.Head(ctx, id)
}

func (t *readsTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	t.r.call("Events")
	return t.Tx.Events(ctx, id, after, limit)
}

func (t *readsTx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	t.r.call("Tail")
	return t.Tx.Tail(ctx, id, n)
}

func (t *readsTx) LastEvents(ctx context.Context, ids []string) (map[string]state.Event, error) {
	t.r.call("LastEvents")
	return t.Tx.LastEvents(ctx, ids)
}

func (t *readsTx) Revision(ctx context.Context) (string, error) {
	t.r.call("Revision")
	return t.Tx.Revision(ctx)
}

func (t *readsTx) FindAction(ctx context.Context, id string, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	t.r.call("FindAction")
	return t.Tx.FindAction(ctx, id, kind, action, since)
}

func (t *readsTx) Outbox(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	t.r.call("Outbox")
	return t.Tx.Outbox(ctx, id)
}

func (t *readsTx) TokenHash(ctx context.Context, id string) (state.TokenHash, error) {
	t.r.call("TokenHash")
	return t.Tx.TokenHash(ctx, id)
}
