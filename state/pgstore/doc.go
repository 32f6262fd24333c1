// Package pgstore is the PostgreSQL backend of state.Store, selected by a
// postgres:// store URL. It owns the sporectl schema in one database: the
// tables, the embedded migrations that create and upgrade them, and the
// mapping of View and Update onto Postgres transactions. docs/postgres.md
// describes the tables, indexes, locks and failure behaviour.
//
// In short: every table lives in the Postgres schema "sporectl". View is a
// REPEATABLE READ READ ONLY transaction (one snapshot, never waits for a
// writer). Update is a READ COMMITTED transaction in which any read or
// write of a spore first locks that spore's row, so writers are serialized
// per spore and the event sequence (spores.last_seq) stays gapless. Large
// appends go through COPY.
//
// The package must never print, log or return the password of the store
// URL, never build SQL from values (parameters only), never migrate a
// schema newer than it knows. Update takes every lock in one order
// (lockorder.go) and runs its function again, a bounded number of times,
// after a deadlock or serialization conflict that rolled it back.
package pgstore
