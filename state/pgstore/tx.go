package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

// tx implements state.Tx on one Postgres transaction.
//
// Locking rule (docs/postgres.md "Locks"): inside Update, every statement
// that reads or writes a spore's data first holds that spore's row lock
// (SELECT … FOR UPDATE, or the UPDATE itself), and Spores/Heads lock every
// row in id order. So two Updates touching one spore run one after the
// other, a read-modify-write never loses an update, and last_seq is
// incremented by one writer at a time. Row locks cannot cover rows that do
// not exist yet, so Spores, CreateSpore and DeleteSpore also take the
// "spore set" advisory lock: a transaction that lists the spores and then
// creates one based on what it saw (only one arch, say) cannot interleave
// with another doing the same. Inside View nothing is locked.
//
// The order those locks are taken in is kept by lockorder.go.
type tx struct {
	tx       queryer
	readOnly bool
	now      time.Time // transaction time, fetched on first need
	held     heldLocks // what the transaction has locked
	// seen is each spore the transaction has found, with its last_seq
	// where a read or an append brought it (else -1): inside a View the
	// snapshot, inside an Update the row lock, holds it still (no other
	// transaction can append to a row this one holds), so a later
	// existence check or Head of the same spore needs no statement.
	seen map[string]int64
	// settings is the settings document as the transaction read it:
	// inside a View the snapshot, inside an Update the row's FOR SHARE
	// (or FOR UPDATE) lock, keeps it true until the transaction's own
	// PutSettings, so it is read once (a tell's send and its delivery
	// pass's snapshot both ask).
	settings *state.Settings
	// outboxes are the spores' outbox rows as read, queued and dead
	// together (outbox.go), until the transaction writes one of them.
	outboxes map[string]outboxRows
	// prefetched are records an Update's lock statement brought
	// (LockSpores), each given once to the next Spore of its id unless
	// the transaction writes the row first. Given once, so no two
	// callers share a record's slices.
	prefetched map[string]state.Spore
	// tokens are, inside a View, the token hashes its reads of spore
	// records brought (nil: the spore has none), for TokenHash.
	tokens map[string]*string
	// want is what the next attempt takes first, set when a lock out of
	// order was refused (restart); shared by the attempts of one Update.
	want       *lockSet
	restart    bool
	waitAnyway bool // the last attempt: out-of-order locks wait too
}

// sporeSetLockKey names the advisory lock over the set of spore ids
// ("sporeset" in ASCII).
const sporeSetLockKey = 0x73706f7265736574

// lockSporeSet takes the spore-set lock once per transaction; it is
// released when the transaction ends.
func (t *tx) lockSporeSet(ctx context.Context) error {
	if t.readOnly || t.held.set {
		return nil
	}
	if (t.held.settings || t.held.settingsRead || t.held.anyRow()) && t.tryOutOfOrder() {
		// First in the lock order: holding anything else, only try it.
		var got bool
		if err := t.tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(sporeSetLockKey)).Scan(&got); err != nil {
			return classify("lock the spore set", err)
		}
		if !got {
			return t.refuse("the spore set", func(w *lockSet) { w.set = true })
		}
	} else if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(sporeSetLockKey)); err != nil {
		return classify("lock the spore set", err)
	}
	t.held.set = true
	return nil
}

var _ state.Tx = (*tx)(nil)

func (t *tx) writable(op string) error {
	if t.readOnly {
		return fmt.Errorf("%s: %w", op, state.ErrReadOnly)
	}
	return nil
}

// lockClause makes reads inside Update take the spore row lock.
func (t *tx) lockClause() string {
	if t.readOnly {
		return ""
	}
	return " FOR UPDATE"
}

// txTime is the server's transaction timestamp, the same for every event
// the transaction stamps.
func (t *tx) txTime(ctx context.Context) (time.Time, error) {
	if t.now.IsZero() {
		if err := t.tx.QueryRow(ctx, `SELECT transaction_timestamp()`).Scan(&t.now); err != nil {
			return time.Time{}, classify("read transaction time", err)
		}
		t.now = t.now.UTC()
	}
	return t.now, nil
}

// Settings reads the settings document. Inside an Update it holds the
// row FOR SHARE until the transaction ends, so what was read stays true
// and other readers do not wait; after a spore row (out of order) the
// lock is only tried (NOWAIT), and a writer holding it restarts the
// transaction, which then takes it first, FOR UPDATE.
func (t *tx) Settings(ctx context.Context) (state.Settings, error) {
	if t.settings != nil {
		return *t.settings, nil
	}
	lock := ""
	switch {
	case t.readOnly, t.held.settings, t.held.settingsRead:
	case t.held.anyRow() && t.tryOutOfOrder():
		lock = " FOR SHARE NOWAIT"
	default:
		lock = " FOR SHARE"
	}
	var doc []byte
	err := t.tx.QueryRow(ctx, `SELECT doc::text FROM sporectl.settings`+lock).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.Settings{}, corrupt("sporectl.settings", "singleton", "the settings row is missing")
	}
	if lockNotAvailable(err) && lock == " FOR SHARE NOWAIT" {
		return state.Settings{}, t.refuse("the settings", func(w *lockSet) { w.settings = true })
	}
	if err != nil {
		return state.Settings{}, classify("read settings", err)
	}
	if lock != "" {
		t.held.settingsRead = true
	}
	var st state.Settings
	if err := json.Unmarshal(doc, &st); err != nil {
		return state.Settings{}, corrupt("sporectl.settings", "singleton", "not a settings document: "+err.Error())
	}
	// Kept only where what holds it still is sure: a View's snapshot,
	// or an Update's lock on the row.
	if t.readOnly || t.held.settings || t.held.settingsRead {
		t.settings = &st
	}
	return st, nil
}

func (t *tx) PutSettings(ctx context.Context, st state.Settings) error {
	if err := t.writable("put settings"); err != nil {
		return err
	}
	doc, err := encodeSettings(st)
	if err != nil {
		return err
	}
	if err := t.orderSettings(ctx); err != nil {
		return err
	}
	t.settings = nil // read again: the row holds what was written
	_, err = t.tx.Exec(ctx, `INSERT INTO sporectl.settings (singleton, doc) VALUES (true, $1)
		ON CONFLICT (singleton) DO UPDATE SET doc = excluded.doc`, doc)
	return classify("put settings", err)
}

// lockSpore takes the spore's row lock and reports ErrNotFound when the
// spore does not exist.
func (t *tx) lockSpore(ctx context.Context, op, id string) error {
	if t.held.rows[id] {
		return nil // held since a statement found it: it is still there
	}
	if err := t.orderRow(ctx, op, id); err != nil {
		return err
	}
	var one int
	err := t.tx.QueryRow(ctx, `SELECT 1 FROM sporectl.spores WHERE id = $1 FOR UPDATE`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.SporeNotFound(id)
	}
	if err != nil {
		return classify(op, err)
	}
	t.held.found(id)
	return nil
}

// lockInUpdate takes the spore's row lock inside an Update, before a read
// of its log, outbox or token, so what is read stays true until the
// transaction ends. Inside a View it does nothing: the snapshot already
// holds still.
func (t *tx) lockInUpdate(ctx context.Context, op, id string) error {
	if t.readOnly {
		return nil
	}
	return t.lockSpore(ctx, op, id)
}

// sporeExists answers without locking, for reads that found nothing and
// must tell "no such spore" from "no rows yet".
func (t *tx) sporeExists(ctx context.Context, op, id string) error {
	if _, ok := t.seen[id]; ok || t.held.rows[id] {
		return nil
	}
	if err := t.orderRow(ctx, op, id); err != nil {
		return err
	}
	var one int
	err := t.tx.QueryRow(ctx, `SELECT 1 FROM sporectl.spores WHERE id = $1`+t.lockClause(), id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return state.SporeNotFound(id)
	}
	if err != nil {
		return classify(op, err)
	}
	t.found(id, -1)
	return nil
}

// found records that a statement found spore id's row: locked by this
// transaction inside an Update, in the snapshot inside a View, where
// last (≥ 0) is its last_seq as read.
func (t *tx) found(id string, last int64) {
	if !t.readOnly {
		t.held.found(id)
	}
	if t.seen == nil {
		t.seen = map[string]int64{}
	}
	if _, ok := t.seen[id]; !ok || last >= 0 {
		t.seen[id] = last
	}
}

// prefetch keeps sp, whose row this Update has just locked, for the next
// Spore of its id; last is its head.
func (t *tx) prefetch(sp state.Spore, last int64) {
	if t.prefetched == nil {
		t.prefetched = map[string]state.Spore{}
	}
	t.prefetched[sp.ID] = sp
	if t.seen == nil {
		t.seen = map[string]int64{}
	}
	t.seen[sp.ID] = last
}

// wroteSpore forgets a record kept of spore id: the transaction is
// changing its row.
func (t *tx) wroteSpore(id string) { delete(t.prefetched, id) }
