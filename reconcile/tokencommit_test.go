package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// gatedStore counts Update calls, holds the first one until release is
// closed, and fails the ones failAt says.
type gatedStore struct {
	state.Store
	updates atomic.Int64
	release chan struct{}
	failAt  int64
}

var errStoreDown = errors.New("store unavailable")

func (s *gatedStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	n := s.updates.Add(1)
	if n == 1 {
		<-s.release
	}
	if n == s.failAt {
		return errStoreDown
	}
	return s.Store.Update(ctx, fn)
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
	return &gatedStore{Store: ds, release: make(chan struct{})}, ids
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
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == len(ids)-1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(s.release)
	wg.Wait()
	return hashes, errs
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
