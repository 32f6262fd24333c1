package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sporectl/sporectl/state"
)

// View runs fn over one REPEATABLE READ READ ONLY snapshot. MVCC means it
// never waits for a writer's locks and never sees uncommitted rows.
func (s *Store) View(ctx context.Context, fn func(state.Tx) error) error {
	pt := s.lazy(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	defer rollback(ctx, pt)
	return s.red.redact(fn(&tx{tx: pt, readOnly: true}))
}

// Update runs fn in a READ COMMITTED transaction and commits it when fn
// returns nil. Per-spore serialization comes from row locks (see tx.go),
// taken in one order (lockorder.go).
//
// fn may run more than once: an attempt whose lock came out of order and
// would have waited, or that Postgres rolled back to break a deadlock
// (40P01) or a serialization conflict (40001), is run again in a new
// transaction, at most maxAttempts times in all, waiting a jittered
// moment after a conflict. Nothing of an abandoned attempt was committed.
// A conflict on the last attempt is an *state.UnavailableError that says
// the store was busy. When the commit's acknowledgement is lost (the
// connection breaks during COMMIT) the outcome is unknown; the error says
// so, and that attempt is never repeated.
func (s *Store) Update(ctx context.Context, fn func(state.Tx) error) error {
	want := &lockSet{}
	for attempt := 1; ; attempt++ {
		last := attempt == maxAttempts
		again, err := s.updateOnce(ctx, fn, want, last)
		if !again {
			return s.red.redact(err)
		}
		code, conflict := conflictCode(err)
		if last {
			// The last attempt waits for every lock, so only a conflict
			// ends it here.
			return s.red.redact(gaveUp(attempt, code, err))
		}
		if conflict {
			s.opts.Logger.Debug("postgres transaction rolled back by a conflict, running it again",
				"location", s.location, "sqlstate", code, "attempt", attempt)
			select {
			case <-ctx.Done():
				return s.red.redact(classify("wait to run the transaction again", ctx.Err()))
			case <-time.After(retryDelay(attempt)):
			}
		} else {
			s.opts.Logger.Debug("postgres transaction restarted to take its locks in order",
				"location", s.location, "attempt", attempt)
		}
	}
}

// maxAttempts bounds how often Update runs fn.
const maxAttempts = 5

// retryDelay is the wait after the attempt-th conflict: random in
// [d/2, d), d doubling from 20 ms, so transactions that collided do not
// meet again in step.
func retryDelay(attempt int) time.Duration {
	d := 20 * time.Millisecond << (attempt - 1)
	return d/2 + rand.N(d/2)
}

// updateOnce is one attempt of Update. again reports that the attempt was
// rolled back and may run again: a lock out of order (want then says what
// to lock first) or a conflict (err holds it).
func (s *Store) updateOnce(ctx context.Context, fn func(state.Tx) error, want *lockSet, last bool) (again bool, err error) {
	pt := s.lazy(pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite})
	defer rollback(ctx, pt)
	t := &tx{tx: pt, want: want, waitAnyway: last}
	if err := t.takeFirst(ctx, want); err != nil {
		_, conflict := conflictCode(err)
		return conflict, err
	}
	if err := fn(t); err != nil {
		if t.restart {
			return true, err
		}
		_, conflict := conflictCode(err)
		return conflict, err
	}
	if t.restart {
		// fn went on after a refused lock; the transaction is aborted.
		return true, errRestart
	}
	if err := pt.Commit(ctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			// fn swallowed a failed statement; Postgres rolled back.
			return false, fmt.Errorf("commit: a statement of the transaction failed, so Postgres rolled it back: %w", err)
		}
		if isConnError(err) {
			s.pool.Reset()
			return false, &state.UnavailableError{Op: "commit: the connection broke during COMMIT", Err: fmt.Errorf("%w: %w", state.ErrOutcomeUnknown, err)}
		}
		err = classify("commit", err)
		_, conflict := conflictCode(err)
		return conflict, err
	}
	return false, nil
}

// rollback ends a transaction that was not committed (a no-op after
// COMMIT). It runs even when ctx has ended, but bounded: a server that
// stopped answering must not hang the caller; pgx then closes the
// connection, which makes the server roll back.
func rollback(ctx context.Context, pt interface{ Rollback(context.Context) error }) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = pt.Rollback(rctx)
}

const rollbackTimeout = 5 * time.Second

func retryableBegin(err error) bool {
	if permanentConnectCode(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableCode(pgErr.Code)
	}
	return isConnError(err)
}
