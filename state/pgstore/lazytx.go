package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// queryer is what a transaction's statements are sent through: lazyTx in
// the store, a pgx.Tx in tests that count them.
type queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// lazyTx is a transaction whose BEGIN goes with its first statement, in
// one batch: one round trip fewer for every View and Update (a tell runs
// five). It takes its connection from the pool then too, so a View that
// sends nothing costs nothing.
//
// Until BEGIN has been answered nothing of the transaction has run, so a
// broken pooled connection (say, after a server restart) is safe to
// replace: the pool is reset and the first statement sent again on a new
// connection, a bounded number of times, waiting for a server that is
// still recovering. After it, a broken connection is the statement's
// error, as it always was.
type lazyTx struct {
	s     *Store
	begin string // the BEGIN statement
	conn  *pgxpool.Conn
	begun bool // BEGIN was answered: statements go straight to conn
	ended bool
}

var _ queryer = (*lazyTx)(nil)

func (s *Store) lazy(opts pgx.TxOptions) *lazyTx {
	return &lazyTx{s: s, begin: beginSQL(opts)}
}

// beginSQL is the BEGIN pgx sends for opts.
func beginSQL(opts pgx.TxOptions) string {
	sql := "begin isolation level " + string(opts.IsoLevel)
	if opts.AccessMode != "" {
		sql += " " + string(opts.AccessMode)
	}
	return sql
}

// start sends BEGIN and the statements queue adds in one batch and
// returns their results once BEGIN has been answered.
func (t *lazyTx) start(ctx context.Context, queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	if t.ended {
		return nil, pgx.ErrTxClosed
	}
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var err error
		if t.conn == nil {
			t.conn, err = t.s.pool.Acquire(ctx)
		}
		if err == nil {
			b := &pgx.Batch{}
			b.Queue(t.begin)
			queue(b)
			br := t.conn.SendBatch(ctx, b)
			if _, err = br.Exec(); err == nil {
				t.begun = true
				return br, nil
			}
			_ = br.Close()
			t.conn.Release() // not idle now, so the pool drops it
			t.conn = nil
		}
		if ctx.Err() != nil || !retryableBegin(err) || attempt >= t.s.opts.ConnectAttempts+1 {
			return nil, startError{classify("begin transaction on "+t.s.location, err)}
		}
		t.s.pool.Reset()
		t.s.opts.Logger.Info("postgres connection lost, reconnecting", "location", t.s.location, "attempt", attempt, "err", t.s.red.redact(err))
		select {
		case <-ctx.Done():
			return nil, startError{classify("begin transaction on "+t.s.location, ctx.Err())}
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
}

// startError is a transaction that could not begin, classified already:
// classify passes it on as it is, so the statement that carried BEGIN is
// not named over the cause.
type startError struct{ error }

func (e startError) Unwrap() error { return e.error }

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun && !t.ended {
		return t.conn.Exec(ctx, sql, args...)
	}
	br, err := t.start(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if err != nil {
		_ = br.Close() // it answers err again
		return tag, err
	}
	return tag, br.Close()
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun && !t.ended {
		return t.conn.Query(ctx, sql, args...)
	}
	br, err := t.start(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return &firstRow{rows: rows, err: err}
}

// SendBatch sends b's statements in one round trip (with BEGIN, when
// they are the transaction's first); the caller reads each one's result
// in order and closes them.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun && !t.ended {
		return t.conn.SendBatch(ctx, b)
	}
	br, err := t.start(ctx, func(out *pgx.Batch) {
		for _, q := range b.QueuedQueries {
			out.Queue(q.SQL, q.Arguments...)
		}
	})
	if err != nil {
		return failedBatch{err}
	}
	return br
}

// failedBatch answers every result of a batch that was never sent with
// the reason.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return &firstRow{err: f.err} }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }

// CopyFrom cannot share a batch: BEGIN goes first, on its own.
func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if !t.begun {
		br, err := t.start(ctx, func(*pgx.Batch) {})
		if err != nil {
			return 0, err
		}
		if err := br.Close(); err != nil {
			return 0, err
		}
	}
	if t.ended {
		return 0, pgx.ErrTxClosed
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// Commit ends the transaction; one that sent nothing has nothing to
// commit. As pgx's: a COMMIT the server answered with ROLLBACK (a
// statement had failed) is pgx.ErrTxCommitRollback.
func (t *lazyTx) Commit(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	defer t.release()
	if !t.begun {
		return nil
	}
	tag, err := t.conn.Exec(ctx, "commit")
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback ends a transaction not committed (after Commit, it does
// nothing). A connection whose ROLLBACK failed is not idle, so the pool
// drops it.
func (t *lazyTx) Rollback(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	defer t.release()
	if !t.begun {
		return nil
	}
	_, err := t.conn.Exec(ctx, "rollback")
	return err
}

func (t *lazyTx) release() {
	t.ended = true
	if t.conn != nil {
		t.conn.Release()
		t.conn = nil
	}
}

// batchRows are the rows of a batch's last statement: once they are read
// the batch is closed (its end read from the connection), so the
// transaction's next statement finds the connection free.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Next() bool {
	if r.br == nil {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.br == nil {
		return
	}
	r.Rows.Close()
	r.err = r.br.Close()
	r.br = nil
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// firstRow is QueryRow's answer over Query, as pgx's own: no row is
// pgx.ErrNoRows, and the rows are closed by Scan.
type firstRow struct {
	rows pgx.Rows
	err  error
}

func (r *firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
