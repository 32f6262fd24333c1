package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// gatedStore counts Update calls, holds the ones gates names until their
// channel is closed, fails the one failAt says, and keeps whether each
// call's context had ended when it went on to the store.
type gatedStore struct {
	state.Store
	updates atomic.Int64
	release chan struct{} // the first Update's gate
	gates   map[int64]chan struct{}
	failAt  int64

	mu      sync.Mutex
	ctxErrs map[int64]error
	ctxs    map[int64]context.Context
}

var errStoreDown = errors.New("store unavailable")

func (s *gatedStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	n := s.updates.Add(1)
	if n == 1 {
		<-s.release
	}
	if g, ok := s.gates[n]; ok {
		<-g
	}
	s.mu.Lock()
	s.ctxErrs[n], s.ctxs[n] = ctx.Err(), ctx
	s.mu.Unlock()
	if n == s.failAt {
		return errStoreDown
	}
	return s.Store.Update(ctx, fn)
}

// ctx is the context the nth Update ran under.
func (s *gatedStore) ctx(n int64) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctxs[n]
}

// ctxErr is the error of the context the nth Update ran under, when it
// went on to the store.
func (s *gatedStore) ctxErr(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctxErrs[n]
}

// tokenStore is a directory store of n spores wished running and one,
// "asleep", wished paused.
func tokenStore(t *testing.T, n int) (*gatedStore, []string) {
	t.Helper()
	ctx := t.Context()
	ds := statetest.Dir(t, state.Settings{})
	now := time.Now().UTC()
	ids := make([]string, n)
	err := ds.Update(ctx, func(tx state.Tx) error {
		for i := range ids {
			ids[i] = fmt.Sprintf("t%02d", i)
			if err := tx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: ids[i], Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}}); err != nil {
				return err
			}
		}
		return tx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: "asleep", Colony: "lab", Rank: state.RankSpore, Desired: state.Paused, Created: now, Updated: now}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return &gatedStore{Store: ds, release: make(chan struct{}), gates: map[int64]chan struct{}{}, ctxErrs: map[int64]error{}, ctxs: map[int64]context.Context{}}, ids
}

// commitAll asks c to commit a fresh hash for each id at once, once the
// first transaction is under way, and releases that transaction when all
// the others wait. It returns each id's hash and outcome.
func commitAll(t *testing.T, c *tokenCommits, s *gatedStore, ids []string) (map[string]state.TokenHash, map[string]error) {
	t.Helper()
	ctx := t.Context()
	hashes := make(map[string]state.TokenHash, len(ids))
	for _, id := range ids {
		_, h, err := state.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		hashes[id] = h
	}
	var mu sync.Mutex
	errs := make(map[string]error, len(ids))
	var wg sync.WaitGroup
	do := func(id string) {
		defer wg.Done()
		err := c.commit(ctx, id, hashes[id])
		mu.Lock()
		errs[id] = err
		mu.Unlock()
	}
	wg.Add(1)
	go do(ids[0])
	for s.updates.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for _, id := range ids[1:] {
		wg.Add(1)
		go do(id)
	}
	waitPending(c, len(ids)-1)
	close(s.release)
	wg.Wait()
	return hashes, errs
}

// waitPending returns once n starts wait for the next transaction.
func waitPending(c *tokenCommits, n int) {
	for {
		c.mu.Lock()
		got := len(c.pending)
		c.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Starts asking together share one transaction: 41 starts, two write
// transactions (the first alone, everyone who queued behind it in the
// second). Each hash is checked as before: the spore wished running has
// it stored, the one put to sleep keeps its old hash and is told the wish
// changed, the one deleted is not found.
func TestTokenCommitsShareOneTransaction(t *testing.T) {
	s, running := tokenStore(t, 40)
	ids := append(append([]string{}, running...), "asleep", "gone")
	c := newTokenCommits(s)
	hashes, errs := commitAll(t, c, s, ids)

	if got := s.updates.Load(); got != 2 {
		t.Errorf("%d write transactions for %d starts, want 2", got, len(ids))
	}
	if err := errs["asleep"]; !errors.Is(err, errWishChanged) {
		t.Errorf("asleep: %v, want errWishChanged", err)
	}
	if err := errs["gone"]; !errors.Is(err, state.ErrNotFound) {
		t.Errorf("gone: %v, want not found", err)
	}
	err := s.View(t.Context(), func(tx state.Tx) error {
		for _, id := range running {
			if errs[id] != nil {
				t.Errorf("%s: %v", id, errs[id])
			}
			h, err := tx.TokenHash(t.Context(), id)
			if err != nil {
				return err
			}
			if h != hashes[id] {
				t.Errorf("%s: the store holds another hash than its start got", id)
			}
		}
		h, err := tx.TokenHash(t.Context(), "asleep")
		if err == nil && h == hashes["asleep"] {
			t.Error("asleep: the hash of a start that must not happen was stored")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A transaction that fails fails every start in it, each with its own id
// in the error, and none of their hashes is stored; the start before it,
// in its own transaction, stands.
func TestTokenCommitsFailedTransactionFailsItsStarts(t *testing.T) {
	s, ids := tokenStore(t, 10)
	s.failAt = 2
	c := newTokenCommits(s)
	hashes, errs := commitAll(t, c, s, ids)
	if errs[ids[0]] != nil {
		t.Errorf("%s: %v", ids[0], errs[ids[0]])
	}
	for _, id := range ids[1:] {
		if !errors.Is(errs[id], errStoreDown) {
			t.Errorf("%s: %v, want the store's error", id, errs[id])
		} else if want := "record the token of " + id + ":"; len(errs[id].Error()) < len(want) || errs[id].Error()[:len(want)] != want {
			t.Errorf("%s: %q does not say what failed", id, errs[id])
		}
	}
	err := s.View(t.Context(), func(tx state.Tx) error {
		for _, id := range ids[1:] {
			if h, err := tx.TokenHash(t.Context(), id); err == nil && h == hashes[id] {
				t.Errorf("%s: hash stored by a failed transaction", id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startCtx is a start and the context it asks under.
type startCtx struct {
	id  string
	ctx context.Context
}

// startsInSecondBatch begins commits for first alone (its transaction
// held at the store's first gate), then for each of the others with its
// own context, in order, and returns once the others all wait for the second
// transaction, which gate 2 holds; then the first is released. Each
// outcome arrives on the returned channel of its id.
func startsInSecondBatch(t *testing.T, c *tokenCommits, s *gatedStore, first string, others []startCtx) (map[string]state.TokenHash, map[string]chan error) {
	t.Helper()
	s.gates[2] = make(chan struct{})
	hashes := map[string]state.TokenHash{}
	outs := map[string]chan error{}
	begin := func(ctx context.Context, id string) {
		_, h, err := state.NewToken()
		require.NoError(t, err)
		out := make(chan error, 1)
		hashes[id], outs[id] = h, out
		go func() { out <- c.commit(ctx, id, h) }()
	}
	begin(t.Context(), first)
	for s.updates.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i, o := range others {
		begin(o.ctx, o.id)
		waitPending(c, i+1)
	}
	close(s.release)
	require.NoError(t, <-outs[first])
	for s.updates.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	return hashes, outs
}

// A start whose context ends while its transaction is held returns at
// once with that error, and the transaction it shared goes on under a
// context that has not ended: the other start's hash is stored. The
// cancelled start is the first of its transaction, so a batch written
// under its first start's context would fail here.
func TestTokenCommitsCancelledStartDoesNotFailOthers(t *testing.T) {
	s, ids := tokenStore(t, 3)
	c := newTokenCommits(s)
	gone, cancel := context.WithCancel(t.Context())
	defer cancel()
	hashes, outs := startsInSecondBatch(t, c, s, ids[0], []startCtx{{ids[1], gone}, {ids[2], t.Context()}})

	cancel()
	select {
	case err := <-outs[ids[1]]:
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "record the token of "+ids[1]+":")
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled start still waits for its transaction")
	}
	close(s.gates[2])
	require.NoError(t, <-outs[ids[2]])
	assert.NoError(t, s.ctxErr(2), "the shared transaction ran under the cancelled start's context")
	assert.Equal(t, hashes[ids[2]], storedHash(t, s, ids[2]))
	assert.EqualValues(t, 2, s.updates.Load())
}

// When every start of a transaction has gone, its context ends: the
// store is not kept writing for no one.
func TestTokenCommitsAllCancelledStopsTheWrite(t *testing.T) {
	s, ids := tokenStore(t, 3)
	c := newTokenCommits(s)
	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel1()
	defer cancel2()
	_, outs := startsInSecondBatch(t, c, s, ids[0], []startCtx{{ids[1], ctx1}, {ids[2], ctx2}})

	cancel1()
	require.ErrorIs(t, <-outs[ids[1]], context.Canceled)
	cancel2()
	require.ErrorIs(t, <-outs[ids[2]], context.Canceled)
	close(s.gates[2])
	for s.ctx(2) == nil {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-s.ctx(2).Done():
		assert.ErrorIs(t, context.Cause(s.ctx(2)), context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the transaction of starts that have all gone goes on")
	}
}

// A start cancelled before any transaction took its hash is not written
// at all; and a start whose context has ended asks for none.
func TestTokenCommitsCancelledBeforeTakenIsNotWritten(t *testing.T) {
	s, ids := tokenStore(t, 2)
	c := newTokenCommits(s)
	_, h0, err := state.NewToken()
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() { first <- c.commit(t.Context(), ids[0], h0) }()
	for s.updates.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(t.Context())
	_, h1, err := state.NewToken()
	require.NoError(t, err)
	out := make(chan error, 1)
	go func() { out <- c.commit(ctx, ids[1], h1) }()
	waitPending(c, 1)
	cancel()
	require.ErrorIs(t, <-out, context.Canceled)
	waitPending(c, 0)
	close(s.release)
	require.NoError(t, <-first)

	require.ErrorIs(t, c.commit(ctx, ids[1], h1), context.Canceled)
	assert.EqualValues(t, 1, s.updates.Load(), "a transaction for a start that had gone")
	assert.NotEqual(t, h1, storedHash(t, s, ids[1]))
}

// storedHash is the token hash the store holds for id, "" for none.
func storedHash(t *testing.T, s state.Store, id string) state.TokenHash {
	t.Helper()
	var h state.TokenHash
	err := s.View(t.Context(), func(tx state.Tx) error {
		var err error
		h, err = tx.TokenHash(t.Context(), id)
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		return err
	})
	require.NoError(t, err)
	return h
}

// issue notes which spores had a token recorded already: those have run,
// and a runtime may look for what it made for them (RanBefore). A spore
// never started has none.
func TestIssueSaysWhichSporesRanBefore(t *testing.T) {
	s, ids := tokenStore(t, 2)
	close(s.release)
	_, h, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, s.Update(t.Context(), func(tx state.Tx) error { return tx.SetTokenHash(t.Context(), ids[0], h) }))
	ps := &Pass{Store: s}
	var plans []*SporePlan
	for _, id := range ids {
		plans = append(plans, &SporePlan{Spore: state.Spore{Wish: state.Wish{ID: id}}})
	}
	out, err := ps.issue(t.Context(), plans)
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.True(t, out[ids[0]].RanBefore(), "a spore with a recorded token")
	assert.False(t, out[ids[1]].RanBefore(), "a spore never started")
}
