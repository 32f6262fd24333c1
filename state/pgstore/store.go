package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sporectl/sporectl/state"
)

// View runs fn over one REPEATABLE READ READ ONLY snapshot. MVCC means it
// never waits for a writer's locks and never sees uncommitted rows.
func (s *Store) View(ctx context.Context, fn func(state.Tx) error) error {
	pt, err := s.begin(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.red.redact(err)
	}
	defer rollback(ctx, pt)
	err = fn(&tx{tx: pt, readOnly: true})
	return s.red.redact(err)
}

// Update runs fn in a READ COMMITTED transaction and commits it when fn
// returns nil. Per-spore serialization comes from row locks (see tx.go).
// When the commit's acknowledgement is lost (the connection breaks during
// COMMIT) the outcome is unknown; the error says so.
func (s *Store) Update(ctx context.Context, fn func(state.Tx) error) error {
	pt, err := s.begin(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite})
	if err != nil {
		return s.red.redact(err)
	}
	defer rollback(ctx, pt)
	if err := fn(&tx{tx: pt}); err != nil {
		return s.red.redact(err)
	}
	if err := pt.Commit(ctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			// fn swallowed a failed statement; Postgres rolled back.
			return s.red.redact(fmt.Errorf("commit: a statement of the transaction failed, so Postgres rolled it back: %w", err))
		}
		if isConnError(err) {
			s.pool.Reset()
			return s.red.redact(&state.UnavailableError{Op: "commit: the connection broke during COMMIT", Err: fmt.Errorf("%w: %w", state.ErrOutcomeUnknown, err)})
		}
		return s.red.redact(classify("commit", err))
	}
	return nil
}

// rollback ends a transaction that was not committed (a no-op after
// COMMIT). It runs even when ctx has ended, but bounded: a server that
// stopped answering must not hang the caller; pgx then closes the
// connection, which makes the server roll back.
func rollback(ctx context.Context, pt pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = pt.Rollback(rctx)
}

const rollbackTimeout = 5 * time.Second

// begin starts a transaction. Nothing has run yet, so a broken pooled
// connection (say, after a server restart) is safe to replace: the pool is
// reset and the attempt repeated a bounded number of times, waiting for a
// server that is still recovering.
func (s *Store) begin(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	delay := 100 * time.Millisecond
	var err error
	for attempt := 1; ; attempt++ {
		var t pgx.Tx
		t, err = s.pool.BeginTx(ctx, opts)
		if err == nil {
			return t, nil
		}
		if ctx.Err() != nil || !retryableBegin(err) || attempt >= s.opts.ConnectAttempts+1 {
			break
		}
		s.pool.Reset()
		s.opts.Logger.Warn("postgres connection lost, reconnecting", "location", s.location, "attempt", attempt, "err", s.red.redact(err))
		select {
		case <-ctx.Done():
			return nil, classify("begin transaction on "+s.location, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
	return nil, classify("begin transaction on "+s.location, err)
}

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
