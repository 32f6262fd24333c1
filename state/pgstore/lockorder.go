package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sporectl/sporectl/state"
)

// The lock order (docs/postgres.md "Locks"). Inside an Update every lock
// is taken in one order, whatever the caller's code does:
//
//  1. the spore-set advisory lock,
//  2. the settings row,
//  3. spore rows, by id (bytewise, the order of id COLLATE "C").
//
// Outbox, token and event rows are only touched while their spore's row
// is held, so they need no place of their own. A transaction that waits
// for a lock only ever waits for one later in the order than everything
// it holds, so no two transactions can wait for each other: no deadlock.
//
// Callers lock lazily (tx.Spore(b), then tx.Append(a)); the store keeps
// the order for them. A lock that comes in order is taken the usual way
// (it may wait). A lock out of order is only tried (NOWAIT,
// pg_try_advisory_xact_lock): when it is free it is taken at once, and
// when it would wait the attempt is abandoned and Update runs fn again in
// a new transaction that first takes, in order, every lock the abandoned
// attempt held or wanted. The last attempt waits for out-of-order locks
// too, so fn always ends; a deadlock there is detected by Postgres and
// retried like any other (tx.go's Update).

// lockSet is what an attempt takes before running fn.
type lockSet struct {
	set      bool // the spore-set lock
	settings bool
	all      bool // every spore row
	pending  bool // the rows of spores with queued entries
	ids      map[string]bool
}

func (w *lockSet) empty() bool {
	return !w.set && !w.settings && !w.all && !w.pending && len(w.ids) == 0
}

func (w *lockSet) addID(id string) {
	if w.ids == nil {
		w.ids = map[string]bool{}
	}
	w.ids[id] = true
}

// errRestart is returned, wrapped, by a statement whose lock came out of
// order and was taken by another transaction; Update restarts. It never
// reaches a caller of Update.
var errRestart = errors.New("a lock out of order is held by another transaction: the transaction restarts taking its locks in order")

// heldLocks is what a transaction holds.
type heldLocks struct {
	set bool
	// settings is the settings row held FOR UPDATE (to write it);
	// settingsRead held FOR SHARE (read inside an Update), which other
	// readers share: every tell reads the settings, and an exclusive
	// read would make one tell at a time of the whole store.
	settings, settingsRead bool
	ids                    map[string]bool // locked, or about to be (orderRow)
	max                    string          // the greatest id in ids
	// rows are the spore rows a statement of this transaction has
	// locked and found. No other transaction can change or delete such
	// a row before this one ends, so a lock taken again (lockSpore)
	// needs no statement; the transaction's own delete takes it out.
	rows map[string]bool
}

// found records that spore id's row is locked by this transaction and
// exists.
func (h *heldLocks) found(id string) {
	if h.rows == nil {
		h.rows = map[string]bool{}
	}
	h.rows[id] = true
}

func (h *heldLocks) took(id string) {
	if h.ids == nil {
		h.ids = map[string]bool{}
	}
	h.ids[id] = true
	if id > h.max {
		h.max = id
	}
}

// anyRow reports whether a spore row is held: then the set lock, the
// settings row and any spore before h.max come out of order.
func (h *heldLocks) anyRow() bool { return len(h.ids) > 0 }

// refuse records a lock that would have waited out of order: the next
// attempt takes what this one holds, and what, first.
func (t *tx) refuse(what string, add func(*lockSet)) error {
	if t.want == nil {
		t.want = &lockSet{}
	}
	w := t.want
	w.set = w.set || t.held.set
	w.settings = w.settings || t.held.settings || t.held.settingsRead
	for id := range t.held.ids {
		w.addID(id)
	}
	add(w)
	t.restart = true
	return fmt.Errorf("lock %s: %w", what, errRestart)
}

// tryOutOfOrder reports whether a lock out of order must only be tried.
func (t *tx) tryOutOfOrder() bool { return !t.readOnly && !t.waitAnyway }

// lockNotAvailable is a NOWAIT that found the lock taken.
func lockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// orderRow is called inside an Update before any statement that locks
// spore id's row. A row later in the order than every row held is left to
// the statement (it may wait); one out of order is tried first.
func (t *tx) orderRow(ctx context.Context, op, id string) error {
	if t.readOnly || t.held.ids[id] {
		return nil
	}
	if id < t.held.max && t.tryOutOfOrder() {
		_, err := t.tx.Exec(ctx, `SELECT 1 FROM sporectl.spores WHERE id = $1 FOR UPDATE NOWAIT`, id)
		if lockNotAvailable(err) {
			return t.refuse("spore "+id, func(w *lockSet) { w.addID(id) })
		}
		if err != nil {
			return classify(op, err)
		}
	}
	t.held.took(id)
	return nil
}

// rowsNowait is the clause for a statement that locks many spore rows:
// with a row held already some of them come out of order, so the whole
// statement only tries.
func (t *tx) rowsNowait() string {
	if t.held.anyRow() && t.tryOutOfOrder() {
		return " NOWAIT"
	}
	return ""
}

// refuseRows handles the error of a statement that locked many rows with
// rowsNowait: a taken row restarts the transaction with add.
func (t *tx) refuseRows(op string, err error, add func(*lockSet)) error {
	if lockNotAvailable(err) && !t.readOnly && !t.waitAnyway {
		return t.refuse(op, add)
	}
	return classify(op, err)
}

// orderSettings is called before a statement that writes the settings
// row. Held only FOR SHARE, the lock must grow, which waits for the
// other readers, who may wait for this transaction's rows: out of order.
func (t *tx) orderSettings(ctx context.Context) error {
	if t.readOnly || t.held.settings {
		return nil
	}
	if (t.held.anyRow() || t.held.settingsRead) && t.tryOutOfOrder() {
		_, err := t.tx.Exec(ctx, `SELECT 1 FROM sporectl.settings FOR UPDATE NOWAIT`)
		if lockNotAvailable(err) {
			return t.refuse("the settings", func(w *lockSet) { w.settings = true })
		}
		if err != nil {
			return classify("lock the settings", err)
		}
	}
	t.held.settings = true
	return nil
}

// takeFirst takes, in order, what an earlier attempt held or wanted,
// before fn runs again.
func (t *tx) takeFirst(ctx context.Context, w *lockSet) error {
	if w == nil || w.empty() {
		return nil
	}
	if w.set {
		if err := t.lockSporeSet(ctx); err != nil {
			return err
		}
	}
	if w.settings {
		if _, err := t.tx.Exec(ctx, `SELECT 1 FROM sporectl.settings FOR UPDATE`); err != nil {
			return classify("lock the settings", err)
		}
		t.held.settings = true
	}
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if !w.all && !w.pending && len(ids) == 0 {
		return nil
	}
	// One statement, so the rows are locked in its ORDER BY: LockRows
	// runs above the sort.
	rows, err := t.tx.Query(ctx, `SELECT id FROM sporectl.spores
		WHERE $1 OR id = ANY($2) OR ($3 AND id IN (SELECT spore_id FROM sporectl.outbox WHERE dead_at IS NULL))
		ORDER BY id FOR UPDATE`, w.all, ids, w.pending)
	if err != nil {
		return classify("lock spores in order", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return classify("lock spores in order", err)
		}
		t.held.took(id)
		t.held.found(id)
	}
	return classify("lock spores in order", rows.Err())
}

// conflictCode is a SQLSTATE after which the whole transaction may simply
// run again: Postgres rolled it back to break a deadlock (40P01) or a
// serialization conflict (40001).
func conflictCode(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") {
		return pgErr.Code, true
	}
	return "", false
}

// busyError is a conflict that outlived every attempt. Its message is for
// a person and holds no SQL; the driver's error stays in the chain.
type busyError struct {
	what string
	err  error
}

func (e *busyError) Error() string {
	return "the store was busy (" + e.what + "), nothing was changed; try again"
}
func (e *busyError) Unwrap() error { return e.err }

func gaveUp(attempts int, code string, err error) error {
	what := "deadlock"
	if code == "40001" {
		what = "conflicting transactions"
	}
	return &state.UnavailableError{Op: fmt.Sprintf("update (%d tries)", attempts), Err: &busyError{what: what, err: err}}
}

// tookAll records the rows a many-row statement locked (lock is its
// locking clause, "" inside a View).
func (t *tx) tookAll(lock string, n int, id func(int) string) {
	if lock == "" {
		return
	}
	for i := range n {
		t.held.took(id(i))
		t.held.found(id(i))
	}
}
