// Package state owns the model of a colony's durable state — spores and
// their desired state, the per-spore event log, the outbox of undelivered
// messages, and hashed spore tokens — and the Store interface through which
// every command reads and writes it in transactions.
//
// The package never observes reality (pods, processes, bridges): what is
// running is recomputed by every command and must never be written here.
// Backends live in sub-packages (dirstore, and later a PostgreSQL one); the
// contract every backend must meet is the test suite in storetest.
package state
