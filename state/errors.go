package state

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sporectl/sporectl/internal/quote"
)

var (
	// ErrNotFound: the spore (or other record) does not exist in the store.
	ErrNotFound = errors.New("not found")
	// ErrExists: a create named a spore that already exists.
	ErrExists = errors.New("already exists")
	// ErrReadOnly: a write was attempted inside a read-only transaction.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrNoStore: the location holds no store yet (run `sporectl init`).
	ErrNoStore = errors.New("no store here")
	// ErrOutcomeUnknown: the acknowledgement of a commit was lost (the
	// connection broke during COMMIT): the transaction may or may not
	// have committed. Read the store again before retrying.
	ErrOutcomeUnknown = errors.New("the outcome of the commit is unknown")
	// ErrStale: a wish or status was made from a read older than the
	// stored wish (see StaleError).
	ErrStale = errors.New("made from an older generation")
)

// StaleError is a PutWish or PutStatus refused because what it writes was
// made from an older read of the spore: the stored wish is at Stored, the
// write at Written. Nothing was written; read the spore again.
type StaleError struct {
	ID      string
	What    string // "wish" or "status"
	Written uint64
	Stored  uint64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("spore %s: %s written at generation %d, but the stored wish is at %d: %v", e.ID, e.What, e.Written, e.Stored, ErrStale)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// CheckWish is the rule PutWish enforces, for every backend: w must raise
// the stored generation.
func CheckWish(stored, w Wish) error {
	if w.Generation <= stored.Generation {
		return &StaleError{ID: w.ID, What: "wish", Written: w.Generation, Stored: stored.Generation}
	}
	return nil
}

// CheckStatus is the rule PutStatus enforces, for every backend: st is
// written against the stored wish at generation stored.
func CheckStatus(id string, stored uint64, st Status) error {
	switch {
	case st.ObservedGeneration < stored:
		return &StaleError{ID: id, What: "status", Written: st.ObservedGeneration, Stored: stored}
	case st.ObservedGeneration > stored:
		return &InvalidError{Field: "observed generation", Value: strconv.FormatUint(st.ObservedGeneration, 10),
			Reason: "is ahead of the stored wish's generation " + strconv.FormatUint(stored, 10)}
	}
	return nil
}

// SporeNotFound is how every backend says that spore id does not exist:
// one wording ("spore x: not found"), wrapping ErrNotFound.
func SporeNotFound(id string) error { return fmt.Errorf("spore %s: %w", id, ErrNotFound) }

// InvalidError is input that breaks a documented grammar or range. It is
// raised before anything is written.
type InvalidError struct {
	Field  string // what was being validated, e.g. "spore id", "--rank"
	Value  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid %s %s: %s", e.Field, quote.Value(e.Value), e.Reason)
}

// CorruptError is stored data that is not what the format says. It names
// the file (or table) and line (or row) so a person can look at it; no
// code path repairs such data by overwriting it.
type CorruptError struct {
	File   string
	Line   int   // 1-based line number; 0 when not line-oriented
	Offset int64 // byte offset of the line's start, -1 when unknown
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt store data: %s: %s", e.Where(), e.Reason)
}

// Where is "file:line", "file at byte N", or the file alone when the
// damage is the file as a whole (Line 0, Offset 0 or unknown).
func (e *CorruptError) Where() string {
	switch {
	case e.Line > 0:
		return e.File + ":" + strconv.Itoa(e.Line)
	case e.Offset > 0:
		return e.File + " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	return e.File
}

// IncompatibleError is a store written in a format this binary does not
// know (usually a newer sporectl). Nothing is read past the version check.
type IncompatibleError struct {
	Where   string
	Found   int
	Newest  int
	Details string
}

func (e *IncompatibleError) Error() string {
	var msg string
	if e.Found > e.Newest {
		msg = fmt.Sprintf("store %s has format version %d; this sporectl understands up to version %d (upgrade sporectl)", e.Where, e.Found, e.Newest)
	} else {
		msg = fmt.Sprintf("store %s has format version %d, older than this sporectl's %d: run 'sporectl init' to upgrade it", e.Where, e.Found, e.Newest)
	}
	if e.Details != "" {
		msg += ": " + e.Details
	}
	return msg
}

// UnavailableError is a store that cannot be reached or opened right now
// (I/O error, disk full, lock not acquired in time, server down). The
// command failed without changing the store.
type UnavailableError struct {
	Op  string
	Err error
}

func (e *UnavailableError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }
