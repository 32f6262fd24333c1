package state

import (
	"context"
	"time"
)

// Store is a colony's durable state. Every read happens inside View and
// every write inside Update, so a command sees one consistent snapshot and
// its writes land all or nothing.
//
// Implementations: dirstore (a directory, the embedded default) and the
// PostgreSQL backend. Both must pass storetest.Run.
type Store interface {
	// View runs fn in a read-only transaction over a consistent snapshot.
	// It never waits for writers. Writes inside fn fail with ErrReadOnly.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction. If fn returns nil every
	// write it made becomes visible at once and survives a crash that
	// follows Update's return; if fn returns an error, or the process dies
	// before Update returns, none of them does. Writers are serialized at
	// least per spore; an Update may wait for another to finish. fn may
	// run more than once: a store may roll an attempt back (a deadlock, a
	// serialization conflict, a lock taken out of order) and run fn again
	// in a new transaction, nothing of the abandoned attempt kept. So fn
	// writes only through its Tx, does nothing outside it that must not
	// happen twice, and sets every result it hands out anew on each run.
	// An *UnavailableError from Update means nothing was committed, unless
	// its message says the outcome is unknown (a connection lost during
	// COMMIT).
	Update(ctx context.Context, fn func(Tx) error) error
	// Check verifies every invariant of the stored data without writing.
	Check(ctx context.Context) (*CheckReport, error)
	// Info says what and where the store is.
	Info() Info
	Close() error
}

// Tx is one transaction. Spore lists are sorted by ID; event slices by Seq.
// Every read or write naming a spore that does not exist returns
// ErrNotFound (wrapped). Times are kept at state.Precision (microseconds)
// in UTC.
type Tx interface {
	Settings(ctx context.Context) (Settings, error)
	PutSettings(ctx context.Context, s Settings) error

	// Spore returns ErrNotFound (wrapped) when id does not exist.
	Spore(ctx context.Context, id string) (Spore, error)
	// Spores returns every spore. A spore whose stored record cannot be
	// read (a row that does not decode, an impossible value) is left out
	// and named in a *DamagedError returned with the intact ones, so one
	// spore's damage is not every reader's (Heads and Pending likewise).
	Spores(ctx context.Context) ([]Spore, error)
	// CreateSpore writes a new spore, wish and status, and returns
	// ErrExists when the id is taken. Its status's ObservedGeneration is
	// at most its Generation.
	CreateSpore(ctx context.Context, s Spore) error
	// PutWish replaces the wish of spore w.ID, keeping its status. The
	// new wish must raise the generation: one at or below the stored one
	// is *StaleError (errors.Is ErrStale), the wish having been made
	// from an older read. reconcile/wish is its one caller outside tests.
	PutWish(ctx context.Context, w Wish) error
	// PutStatus replaces the status of spore id, keeping its wish. The
	// status must be written against the stored wish: an
	// ObservedGeneration below the stored Generation is *StaleError
	// (errors.Is ErrStale), one above it *InvalidError. UpdateStatus is
	// its one caller outside the stores' contract suite (the lint in
	// updatestatus_lint_test.go).
	PutStatus(ctx context.Context, id string, st Status) error
	// DeleteSpore removes the spore with its events, outbox and token.
	DeleteSpore(ctx context.Context, id string) error

	// Head reads the spore's log counters without reading the log.
	Head(ctx context.Context, id string) (SporeHead, error)
	// Heads returns every spore's head, keyed by id; a damaged spore is
	// left out and named in a *DamagedError, as by Spores.
	Heads(ctx context.Context) (map[string]SporeHead, error)
	// Append assigns the next sequence numbers to evs (ignoring any Seq they
	// carry), stamps a zero At with the transaction's time, and returns them.
	Append(ctx context.Context, id string, evs []Event) ([]Event, error)
	// Events returns up to limit events with Seq > after (limit <= 0: all).
	// Its cost does not depend on how many events precede after.
	Events(ctx context.Context, id string, after uint64, limit int) ([]Event, error)
	// Tail returns the last n events, read from the end of the log.
	Tail(ctx context.Context, id string, n int) ([]Event, error)
	// LastEvents returns the last event of each spore in ids, keyed by
	// id: what Tail(ctx, id, 1) returns for each, read at once for a
	// list of many spores. Unlike the other reads it returns no
	// ErrNotFound: an id that does not exist (a spore deleted since the
	// caller read its list) is skipped, as is a spore whose log is
	// empty; both are absent from the map. Repeated ids are read once.
	// A spore whose record or last event does not read is left out and
	// named in a *DamagedError, as by Spores.
	// Its cost grows with len(ids), not with any log's length: on
	// PostgreSQL it is one query whatever len(ids) (inside an Update one
	// statement before it locks the spores' rows, in id order); the
	// directory store reads the end of each log, with no round trips.
	LastEvents(ctx context.Context, ids []string) (map[string]Event, error)
	// FindAction returns the newest event of kind (KindPrompt or
	// KindMessage: the kinds that carry a message's id as their Action)
	// whose Action is action and whose At is at or after since; found is
	// false when there is none that recent. It is how a repeated message
	// is recognised (outbox.SendOnce), so its cost must not grow with
	// the agent lines a busy spore writes: PostgreSQL looks the id up in
	// an index of the two kinds' actions; the directory store reads back
	// from the end of the log, decoding only the events that are not
	// agent lines, and stops at the first of those older than since
	// (the store's writers stamp them with their clock, in log order;
	// agent lines carry their bridge's). Events the transaction appended
	// count. Another kind is an *InvalidError.
	FindAction(ctx context.Context, id string, kind EventKind, action string, since time.Time) (ev Event, found bool, err error)
	// Revision names the committed state a View reads: two Views of one
	// store with the same revision read the same settings, rows, heads,
	// outboxes and events, and a commit that changes any of them makes
	// another. It is opaque (only equality means anything) and reads no
	// row: a reader that kept what it made of one revision knows, from
	// the revision alone, that it would make the same again. A revision
	// may change with nothing changed (a restart of the PostgreSQL
	// server does; a compaction of the directory store does not). Inside
	// an Update, whose reads see no fixed state, it is "".
	Revision(ctx context.Context) (string, error)
	// LockSpores takes, inside an Update, the locks that writing each
	// spore in ids needs, in the store's own order, before the
	// transaction touches them: a transaction that writes several
	// spores (a tell: its target's outbox, then its sender's log) then
	// never asks for one out of that order, which on PostgreSQL, when
	// another transaction holds it, rolls the attempt back and runs it
	// again. An id with no spore locks nothing and is no error. It
	// reads nothing; in a View, and on the directory store (one writer
	// at a time), it does nothing.
	LockSpores(ctx context.Context, ids []string) error

	// Outbox lists the spore's undelivered messages in the order queued,
	// dead letters left out.
	Outbox(ctx context.Context, id string) ([]OutboxEntry, error)
	// Enqueue adds e to its spore's outbox, stamping a zero At with the
	// transaction's time; an entry with the same ID already there, queued
	// or dead, makes it a no-op that reports added=false. An entry given
	// with Dead set is an *InvalidError: only Bury makes a dead letter.
	Enqueue(ctx context.Context, e OutboxEntry) (added bool, err error)
	// Dequeue removes an entry, queued or dead (delivered, or dropped by
	// a person); a missing entry is ErrNotFound.
	Dequeue(ctx context.Context, spore, entryID string) error
	// Bury makes the queued entry entryID a dead letter (its Dead set to
	// d, checked by CheckDeadLetter): it keeps its place among the dead
	// letters and leaves the queue, so what was behind it is next. An
	// entry that is not queued (missing, or dead already) is ErrNotFound.
	Bury(ctx context.Context, spore, entryID string, d DeadLetter) error
	// DeadLetters lists the spore's dead letters in the order they were
	// queued.
	DeadLetters(ctx context.Context, id string) ([]OutboxEntry, error)
	// DeadLetterCounts is how many dead letters each spore that has any
	// holds, keyed by spore id. Its cost grows with the dead letters
	// (and, on the directory store, the queued entries and the rows
	// committed since the last compaction), not with the fleet or the
	// events.
	DeadLetterCounts(ctx context.Context) (map[string]int, error)
	// Pending returns every spore's undelivered entries, each list in the
	// order queued, keyed by spore id; spores with an empty outbox (or
	// only dead letters) are absent. It is one read whose cost grows with the number of queued
	// entries, not with the number of spores or events. Inside an Update
	// it locks the spores it returns, as Outbox does. A damaged spore is
	// left out and named in a *DamagedError, as by Spores.
	Pending(ctx context.Context) (map[string][]OutboxEntry, error)

	// TokenHash returns the stored hash, or ErrNotFound when none is set.
	TokenHash(ctx context.Context, id string) (TokenHash, error)
	SetTokenHash(ctx context.Context, id string, h TokenHash) error
}

// Info describes a store for `sporectl version`, `check` and errors.
type Info struct {
	Backend       string `json:"backend"`  // "dir" or "postgres"
	Location      string `json:"location"` // path, or URL without password
	FormatVersion int    `json:"format_version"`
}

// CheckReport is what Check found. Problems are violations of an
// invariant; Notes are states the format allows and the next writer
// clears (an uncommitted tail after a crash, for instance).
type CheckReport struct {
	Spores   int       `json:"spores"`
	Events   uint64    `json:"events"`
	Problems []Problem `json:"problems"`
	Notes    []Problem `json:"notes"`
}

// Problem names where and what.
type Problem struct {
	Where   string `json:"where"` // file[:line], or table/row
	Message string `json:"message"`
}

// OK reports whether no invariant is violated.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }
