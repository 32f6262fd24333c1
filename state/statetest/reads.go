package statetest

import (
	"context"
	"sync/atomic"

	"github.com/sporectl/sporectl/state"
)

// Reads wraps a store and counts what its transactions read: spore
// records (one per Spore, one per record Spores returns) and reads of the
// whole fleet (Spores, Heads, Pending), so a test can require that a
// command about named spores reads only theirs.
type Reads struct {
	state.Store
	// Records is the spore records read; Fleet the whole-fleet reads.
	Records atomic.Int64
	Fleet   atomic.Int64
}

// Reset zeroes the counts.
func (r *Reads) Reset() { r.Records.Store(0); r.Fleet.Store(0) }

func (r *Reads) View(ctx context.Context, fn func(state.Tx) error) error {
	return r.Store.View(ctx, func(tx state.Tx) error { return fn(&readsTx{Tx: tx, r: r}) })
}

func (r *Reads) Update(ctx context.Context, fn func(state.Tx) error) error {
	return r.Store.Update(ctx, func(tx state.Tx) error { return fn(&readsTx{Tx: tx, r: r}) })
}

type readsTx struct {
	state.Tx
	r *Reads
}

func (t *readsTx) Spore(ctx context.Context, id string) (state.Spore, error) {
	sp, err := t.Tx.Spore(ctx, id)
	if err == nil {
		t.r.Records.Add(1)
	}
	return sp, err
}

func (t *readsTx) Spores(ctx context.Context) ([]state.Spore, error) {
	all, err := t.Tx.Spores(ctx)
	t.r.Fleet.Add(1)
	t.r.Records.Add(int64(len(all)))
	return all, err
}

func (t *readsTx) Heads(ctx context.Context) (map[string]state.SporeHead, error) {
	t.r.Fleet.Add(1)
	return t.Tx.Heads(ctx)
}

func (t *readsTx) Pending(ctx context.Context) (map[string][]state.OutboxEntry, error) {
	t.r.Fleet.Add(1)
	return t.Tx.Pending(ctx)
}
