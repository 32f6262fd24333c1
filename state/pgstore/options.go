package pgstore

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options tune how the store talks to the server. The zero value is usable.
type Options struct {
	// Logger receives connection retries and migrations; nil discards.
	Logger *slog.Logger
	// ConnectTimeout bounds one connection attempt (default 5s).
	ConnectTimeout time.Duration
	// ConnectAttempts bounds how often Open and Init try to reach the
	// server before giving up (default 4, with exponential backoff).
	ConnectAttempts int
	// StatementTimeout is Postgres' statement_timeout for every session
	// (default 60s), so a stuck query or lock wait fails instead of hanging.
	StatementTimeout time.Duration
	// IdleInTxTimeout ends a session that holds a transaction open without
	// sending anything (default 5m): a wedged client must not hold spore
	// row locks forever.
	IdleInTxTimeout time.Duration
	// MaxConns caps the pool (default 4).
	MaxConns int32
	// Tracer, if set, is pgx's tracer of every connection: it is told of
	// each statement, batch and COPY the store sends (benchmarks count a
	// request's round trips with it). It sees the statements' arguments,
	// which can hold a token's digest, so it must not log them.
	Tracer pgx.QueryTracer
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.ConnectAttempts <= 0 {
		o.ConnectAttempts = 4
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = 60 * time.Second
	}
	if o.IdleInTxTimeout <= 0 {
		o.IdleInTxTimeout = 5 * time.Minute
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	return o
}
