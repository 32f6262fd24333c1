package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile/colonyspec"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storecopy"
)

// Exit codes, documented in docs/exit-codes.md. This file is the only
// place that turns an error into one.
const (
	ExitOK           = 0
	ExitError        = 1  // anything not classified below
	ExitDiffers      = 1  // diff: applying the files would change the store (kubectl diff's convention)
	ExitUsage        = 2  // bad flags, arguments, ids or output format
	ExitUnhealthy    = 3  // ran fine, but something is not healthy (for cron)
	ExitNotFound     = 4  // a named spore does not exist
	ExitConflict     = 5  // it exists already
	ExitStore        = 6  // the store is missing, unreachable, locked or out of space
	ExitCorrupt      = 7  // stored data breaks the format; `check` found problems
	ExitIncompatible = 8  // the store's format is newer (or older) than this binary
	ExitRuntime      = 9  // the runtime (Kubernetes, the OS, a bridge) failed or cannot be reached
	ExitAsleep       = 10 // the spore is asleep and the command would not wake it (prompt without --wake)
	ExitUnknown      = 11 // the store's commit may or may not have happened (PostgreSQL connection lost during COMMIT)
	ExitUnauthorized = 12 // serve refused the caller's spore id and token (401)
	ExitForbidden    = 13 // serve refused the call for the caller's rank or reach (403)
	ExitAPI          = 14 // serve could not be reached, or failed (5xx), after the client's retries
	ExitListen       = 15 // serve could not listen on its address: taken, or not permitted
	ExitOverBudget   = 16 // the spore is over its budget: the message was queued, not delivered (prompt without --over-budget)
	ExitInterrupted  = 130
)

// UsageError is a mistake on the command line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, a ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, a...)}
}

// RuntimeError is a failure of the runtime: the Kubernetes API, a process
// that would not start, a bridge that never became healthy. What the
// command recorded in the store before it stays recorded.
type RuntimeError struct {
	Op  string
	Err error
}

func (e *RuntimeError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

// AsleepError refuses to deliver to a sleeping spore without --wake.
type AsleepError = outbox.AsleepError

// OverBudgetError says a message was queued for a spore over its budget.
type OverBudgetError = outbox.OverBudgetError

// DiffersError is diff's answer that applying the files would change the
// store (exit 1, kubectl diff's convention); the changes have been
// printed as data.
type DiffersError struct{ Changes int }

func (e *DiffersError) Error() string {
	return fmt.Sprintf("applying the files would change %d spore(s)", e.Changes)
}

// UnhealthyError reports that the command did its work and found some
// spores not healthy; its message has already been printed as data.
type UnhealthyError struct{ Msg string }

func (e *UnhealthyError) Error() string { return e.Msg }

// exitCode classifies err. A joined error (several spores failing for
// different reasons) gets the code of its most telling part, in this
// order: usage, interrupted, outcome unknown, incompatible, corrupt,
// store, runtime, listen, not found, conflict, asleep, unhealthy
// (docs/exit-codes.md).
func exitCode(err error) int {
	var (
		usage    *UsageError
		invalid  *state.InvalidError
		refused  *wish.RefusedError
		unh      *UnhealthyError
		corrupt  *state.CorruptError
		incompat *state.IncompatibleError
		unavail  *state.UnavailableError
		rterr    *RuntimeError
		asleep   *AsleepError
		over     *OverBudgetError
		apiErr   *mycelia.Error
		apiCfg   *mycelia.ConfigError
		apiDown  *mycelia.UnreachableError
		listen   *ListenError
		spec     *colonyspec.Error
		differs  *DiffersError
		tooLarge *outbox.TooLargeError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage), errors.As(err, &invalid), errors.As(err, &refused), errors.As(err, &apiCfg), errors.As(err, &spec), errors.As(err, &tooLarge):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		// Ctrl-C wins over what it interrupted (a runtime step, say).
		return ExitInterrupted
	case errors.As(err, &apiErr):
		return apiExitCode(apiErr)
	case errors.As(err, &apiDown):
		return ExitAPI
	case errors.Is(err, state.ErrOutcomeUnknown):
		// Not "nothing was changed" (6): the command may have taken effect.
		return ExitUnknown
	case errors.As(err, &incompat):
		return ExitIncompatible
	case errors.As(err, &corrupt):
		return ExitCorrupt
	case errors.Is(err, state.ErrNoStore), errors.As(err, &unavail):
		return ExitStore
	case errors.As(err, &rterr):
		return ExitRuntime
	case errors.As(err, &listen):
		return ExitListen
	case errors.Is(err, state.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, state.ErrExists), errors.Is(err, storecopy.ErrNotEmpty):
		return ExitConflict
	case errors.As(err, &asleep):
		return ExitAsleep
	case errors.As(err, &over):
		return ExitOverBudget
	case errors.As(err, &unh):
		return ExitUnhealthy
	case isCobraUsage(err):
		return ExitUsage
	case errors.As(err, &differs):
		return ExitDiffers
	}
	return ExitError
}

// apiExitCode classifies an answer of serve to a client command
// (mycologist, swarm).
func apiExitCode(e *mycelia.Error) int {
	switch {
	case e.Status == 400, e.Status == 413:
		return ExitUsage
	case e.Status == 401:
		return ExitUnauthorized
	case e.Status == 403:
		return ExitForbidden
	case e.Status == 404:
		return ExitNotFound
	case e.Status == 409 && (e.Code == mycelia.CodeAsleep || e.Code == mycelia.CodeStopped):
		return ExitAsleep
	case e.Status == 409 && e.Code == mycelia.CodeOverBudget:
		return ExitOverBudget
	case e.Status == 409:
		return ExitConflict
	case e.Status == 429, e.Status >= 500:
		return ExitAPI
	}
	return ExitError
}

// isCobraUsage recognises the errors cobra raises itself for an unknown
// command or a flag it could not parse before our hooks run.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "required flag", "accepts ", "requires at least", "requires at most"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// reportError prints err once on stderr and returns its exit code; a
// usage error says which help to read (help, such as "sporectl colony
// set --help": that of the command the error is about).
func reportError(err error, help string, errOut io.Writer) int {
	code := exitCode(err)
	if code == ExitOK {
		return code
	}
	var differs *DiffersError
	if errors.As(err, &differs) {
		// The changes were printed as data; the code says the rest.
		return code
	}
	var unh *UnhealthyError
	if code == ExitUnhealthy && errors.As(err, &unh) {
		// The unhealthy spores were printed as data already.
		if unh.Msg != "" {
			fmt.Fprintln(errOut, quote.Message(unh.Msg))
		}
		return code
	}
	// Bounded: an error may wrap one that echoes a huge value (a path).
	fmt.Fprintf(errOut, "error: %s\n", quote.Message(err.Error()))
	if code == ExitUsage {
		fmt.Fprintf(errOut, "Run '%s' for usage.\n", help)
	}
	if errors.Is(err, state.ErrNoStore) {
		fmt.Fprintln(errOut, "Run 'sporectl init' to create one.")
	}
	if code == ExitUnknown {
		fmt.Fprintln(errOut, "The change may or may not have been committed: look (status, events) before you run it again.")
	}
	return code
}
