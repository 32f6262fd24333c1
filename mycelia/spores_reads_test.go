package mycelia

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// callCounter wraps a store and counts, by method, the reads of its
// transactions: each is one query on PostgreSQL (LastEvents in a View
// too), so the counts are the round trips a request costs there.
type callCounter struct {
	state.Store
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[method]++
}

// take returns the counts and zeroes them.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	c.n = nil
	return out
}

func (c *callCounter) View(ctx context.Context, fn func(state.Tx) error) error {
	return c.Store.View(ctx, func(tx state.Tx) error { return fn(&countedTx{Tx: tx, c: c}) })
}

func (c *callCounter) Update(ctx context.Context, fn func(state.Tx) error) error {
	return c.Store.Update(ctx, func(tx state.Tx) error { return fn(&countedTx{Tx: tx, c: c}) })
}

type countedTx struct {
	state.Tx
	c *callCounter
}

func (t *countedTx) Settings(ctx context.Context) (state.Settings, error) {
	t.c.add("Settings")
	return t.Tx.Settings(ctx)
}

func (t *countedTx) Spores(ctx context.Context) ([]state.Spore, error) {
	t.c.add("Spores")
	return t.Tx.Spores(ctx)
}

func (t *countedTx) Heads(ctx context.Context) (map[string]state.SporeHead, error) {
	t.c.add("Heads")
	return t.Tx.Heads(ctx)
}

func (t *countedTx) Pending(ctx context.Context) (map[string][]state.OutboxEntry, error) {
	t.c.add("Pending")
	return t.Tx.Pending(ctx)
}

func (t *countedTx) Spore(ctx context.Context, id string) (state.Spore, error) {
	t.c.add("Spore")
	return t.Tx.Spore(ctx, id)
}

func (t *countedTx) Head(ctx context.Context, id string) (state.SporeHead, error) {
	t.c.add("Head")
	return t.Tx.Head(ctx, id)
}

func (t *countedTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	t.c.add("Events")
	return t.Tx.Events(ctx, id, after, limit)
}

func (t *countedTx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	t.c.add("Tail")
	return t.Tx.Tail(ctx, id, n)
}

func (t *countedTx) LastEvents(ctx context.Context, ids []string) (map[string]state.Event, error) {
	t.c.add("LastEvents")
	return t.Tx.LastEvents(ctx, ids)
}

func (t *countedTx) Outbox(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	t.c.add("Outbox")
	return t.Tx.Outbox(ctx, id)
}

func (t *countedTx) TokenHash(ctx context.Context, id string) (state.TokenHash, error) {
	t.c.add("TokenHash")
	return t.Tx.TokenHash(ctx, id)
}

// TestSporesListReadsNoSporeAlone: GET /api/spores over a fleet that
// changed nothing reads every last event with one LastEvents call and no
// Tail, and its reads (the caller's token and record, the pass's whole
// fleet reads, the list's) are as many with 87 spores in reach as with
// 167: nothing in the pass over them nor in the list is read per spore. Both fleets are above the pass's limit for
// reading named spores one by one (reconcile.namedReads, 64).
func TestSporesListReadsNoSporeAlone(t *testing.T) {
	h := newHarness(t).colony()
	c := &callCounter{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	var counts []map[string]int
	for _, more := range []int{80, 80} {
		for range more {
			i := len(h.tokens)
			h.add(state.Spore{Wish: state.Wish{ID: fmt.Sprintf("lab-%03d", i), Colony: "lab", Rank: state.RankSpore}}, i%2 == 0)
		}
		// The first list after they are created commits their first
		// observed status, reading each one's record to write it over;
		// the second changes nothing and is the one counted.
		require.Equal(t, http.StatusOK, h.do("arch", "GET", "/api/spores", nil).status)
		c.take()
		r := h.do("arch", "GET", "/api/spores", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l SporeList
		r.decode(t, &l)
		require.Len(t, l.Spores, len(h.tokens)-1, "every spore but the [arch]")
		for _, s := range l.Spores {
			require.False(t, s.LastEventAt.IsZero(), "%s has a first prompt", s.ID)
		}
		got := c.take()
		require.Equal(t, 1, got["LastEvents"], "%v", got)
		require.Zero(t, got["Tail"], "%v", got)
		t.Logf("%d spores in reach: %v", len(l.Spores), got)
		counts = append(counts, got)
	}
	require.Equal(t, counts[0], counts[1], "reads with %d and with %d in reach", 80+7, 160+7)
}
