package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sporectl/sporectl/state"
)

// redactor keeps the password out of every error the package returns.
// pgx does not print passwords itself, but a server or driver message may
// echo parts of a connection string, so every error leaving the package
// goes through redact.
type redactor struct{ secret string }

func (r redactor) redact(err error) error {
	if err == nil || r.secret == "" || !strings.Contains(err.Error(), r.secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), r.secret, "xxxxx"), err: err}
}

// redactedError keeps the chain for errors.Is/As while printing the
// redacted message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// classify turns an error from the driver into the state package's
// vocabulary; op says what was being done.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var se startError
	if errors.As(err, &se) {
		return se.error
	}
	// A connection attempt that timed out carries DeadlineExceeded from
	// ConnectTimeout, not from the caller: the server is unavailable.
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return &state.UnavailableError{Op: op, Err: fmt.Errorf("no usable connection to the postgres server: %w", err)}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "22021", pgErr.Code == "22P05", pgErr.Code == "54000", pgErr.Code == "23514":
			// character_not_in_repertoire, untranslatable_character,
			// program_limit_exceeded, check_violation: the input cannot be
			// stored as given. Validation in Go catches these first; this
			// is the safety net.
			return &state.InvalidError{Field: "value for " + op, Value: "", Reason: pgErr.Message}
		case unavailableCode(pgErr.Code):
			return &state.UnavailableError{Op: op, Err: err}
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if isConnError(err) {
		return &state.UnavailableError{Op: op, Err: fmt.Errorf("no usable connection to the postgres server: %w", err)}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// unavailableCode lists the SQLSTATEs that mean "the server could not do it
// now", as opposed to "the request is wrong".
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "28"),    // invalid authorization
		strings.HasPrefix(code, "53"),    // insufficient resources
		strings.HasPrefix(code, "57"),    // operator intervention: shutdown, cancel, timeout
		strings.HasPrefix(code, "58"),    // system error (I/O)
		code == "3D000",                  // database does not exist
		code == "40001", code == "40P01", // serialization failure, deadlock: try again
		code == "55P03", // lock not available
		code == "25006": // read-only transaction (hot standby)
		return true
	}
	return false
}

// permanentConnectCode is a connection failure that retrying cannot fix.
func permanentConnectCode(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "28") || pgErr.Code == "3D000" || pgErr.Code == "42501"
}

// isConnError reports whether err came from the transport rather than from
// a statement: the connection broke, timed out or could not be made.
func isConnError(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr), pgconn.Timeout(err):
		return true
	case errors.As(err, &pgErr):
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	case errors.Is(err, pgx.ErrTxClosed), errors.Is(err, pgx.ErrTxCommitRollback):
		return false
	}
	// pgx reports a broken connection as a plain error ("conn closed",
	// "unexpected EOF"); anything that is not a server answer is transport.
	return true
}

func corrupt(table, row, reason string) error {
	return &state.CorruptError{File: "table " + table, Offset: -1, Reason: row + ": " + reason}
}
