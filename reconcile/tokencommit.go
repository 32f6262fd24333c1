package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sporectl/sporectl/state"
)

// tokenCommits records the token hashes of a pass's starts, many in one
// transaction. Every start still commits its hash before its credentials
// leave this process (see issued); starts asking at the same time share
// one write transaction instead of queueing for one each. The store
// serializes writers, so with one transaction per start a fleet's wake
// was bound by a hundred fsyncs in a row (docs/performance.md, the wake
// throughput).
//
// Whoever asks while no transaction is running writes everything pending,
// its own hash included; the others wait for that transaction, or write
// the next one themselves. Each hash is re-checked against the spore in
// the transaction that records it, as when each had its own.
type tokenCommits struct {
	store state.Store

	mu      sync.Mutex
	cond    *sync.Cond
	writing bool
	pending []*tokenWrite
}

// tokenWrite is one start's hash and, once written, its outcome.
type tokenWrite struct {
	id   string
	hash state.TokenHash
	done bool
	err  error
}

func newTokenCommits(store state.Store) *tokenCommits {
	c := &tokenCommits{store: store}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// commit records hash as spore id's token and returns when a transaction
// holding it has committed or failed. It fails with errWishChanged when
// the spore is no longer wished running, and with state.ErrNotFound when
// it is gone: a `sleep` or `delete` that committed meanwhile wins.
func (c *tokenCommits) commit(ctx context.Context, id string, hash state.TokenHash) error {
	w := &tokenWrite{id: id, hash: hash}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, w)
	for !w.done {
		if c.writing {
			c.cond.Wait()
			continue
		}
		batch := c.pending
		c.pending, c.writing = nil, true
		c.mu.Unlock()
		c.write(ctx, batch)
		c.mu.Lock()
		c.writing = false
		c.cond.Broadcast()
	}
	return w.err
}

// write commits batch in one transaction and sets each write's outcome.
// A failed transaction fails every start in it, as its own would have.
func (c *tokenCommits) write(ctx context.Context, batch []*tokenWrite) {
	results := make([]error, len(batch))
	err := c.store.Update(ctx, func(tx state.Tx) error {
		for i, w := range batch {
			results[i] = nil // fn may run again: every outcome anew
			sp, err := tx.Spore(ctx, w.id)
			if errors.Is(err, state.ErrNotFound) {
				results[i] = err
				continue
			}
			if err != nil {
				return fmt.Errorf("read spore %s: %w", w.id, err)
			}
			if sp.Desired != state.Running {
				// Put to sleep since the snapshot: the newer wish wins.
				results[i] = errWishChanged
				continue
			}
			if err := tx.SetTokenHash(ctx, w.id, w.hash); err != nil {
				return fmt.Errorf("set the token hash of %s: %w", w.id, err)
			}
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range batch {
		w.done = true
		switch {
		case err != nil:
			w.err = fmt.Errorf("record the token of %s: %w", w.id, err)
		default:
			w.err = results[i]
		}
	}
}
