package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// One writer at a time takes everything pending and writes it; whoever
// asks meanwhile waits for the next transaction. Each hash is re-checked
// against the spore in the transaction that records it, as when each had
// its own.
type tokenCommits struct {
	store state.Store

	mu      sync.Mutex
	writing bool
	pending []*tokenWrite
}

// tokenWrite is one start's hash and, once done is closed, its outcome.
type tokenWrite struct {
	ctx  context.Context // the start's: the batch is written while one of them waits
	id   string
	hash state.TokenHash
	done chan struct{}
	err  error
}

func newTokenCommits(store state.Store) *tokenCommits {
	return &tokenCommits{store: store}
}

// commit records hash as spore id's token and returns when a transaction
// holding it has committed or failed. It fails with errWishChanged when
// the spore is no longer wished running, and with state.ErrNotFound when
// it is gone: a `sleep` or `delete` that committed meanwhile wins.
//
// When ctx ends first, commit returns its error at once. A hash not yet
// taken into a transaction is then never written; one already taken may
// still be, which leaves the store the hash of a token no process got:
// harmless, as after any start that fails past its commit (docs/
// architecture.md, "Which writes are apart, and why").
func (c *tokenCommits) commit(ctx context.Context, id string, hash state.TokenHash) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("record the token of %s: %w", id, err)
	}
	w := &tokenWrite{ctx: ctx, id: id, hash: hash, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, w)
	if !c.writing {
		c.writing = true
		go c.flush()
	}
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		c.mu.Lock()
		c.pending = slices.DeleteFunc(c.pending, func(p *tokenWrite) bool { return p == w })
		c.mu.Unlock()
		return fmt.Errorf("record the token of %s: %w", id, ctx.Err())
	}
}

// flush writes what is pending, one transaction after another, until
// nothing is. It runs in a goroutine of its own so that no start's
// context, nor its wait, is another's: a start that gives up does not
// fail the others in its transaction.
func (c *tokenCommits) flush() {
	for {
		c.mu.Lock()
		batch := c.pending
		c.pending = nil
		if len(batch) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := whileAnyWaits(batch)
		c.write(ctx, batch)
		cancel()
	}
}

// whileAnyWaits is a context for writing batch that ends when the last of
// its starts' contexts has ended: one caller cancelled (a worker of a
// pass that failed, a client gone) does not fail the others' writes, and
// when all have gone the write stops. Its values are the first start's.
func whileAnyWaits(batch []*tokenWrite) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(batch[0].ctx))
	var mu sync.Mutex
	left := len(batch)
	stops := make([]func() bool, 0, len(batch))
	for _, w := range batch {
		wctx := w.ctx
		stops = append(stops, context.AfterFunc(wctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel(context.Cause(wctx))
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(context.Canceled)
	}
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
	for i, w := range batch {
		if err != nil {
			w.err = fmt.Errorf("record the token of %s: %w", w.id, err)
		} else {
			w.err = results[i]
		}
		close(w.done)
	}
}
