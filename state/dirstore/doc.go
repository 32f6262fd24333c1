// Package dirstore is the directory backend of state.Store: the embedded
// default, holding a colony's state in plain files under one directory.
//
// The format, its invariants, the write order and crash recovery are
// described in docs/state-format.md; comments here refer to its sections
// as "format §N".
//
// In short: a snapshot (state.json) plus a commit log (txlog.N) hold every
// spore's row; each committed transaction is one checksummed line in the
// commit log, and that line is the transaction's commit point. The commit
// log begins with a header that each commit updates after its fsync, so a
// log that lost committed lines (a truncate) is told from a torn tail.
// Event logs (events/*.log) are append-only; a row records how many of
// their bytes are committed, so bytes past that point are invisible and
// dropped by the next writer, and a log no committed row names is removed
// by the next writer.
//
// Nothing read from the store is used as a path unchecked: rows are checked
// as they are decoded (a valid spore id, an event-log name derived from it),
// and the store's own files are opened without following links.
//
// Guarantees: all-or-nothing visibility of a transaction across every file
// it touches; one writer at a time (flock on the lock file); readers take no
// lock and never see a half-done transaction; a crash loses at most the
// transaction in flight; a torn tail is detected and dropped, never parsed.
// Data that breaks the format is reported with file and line and is never
// rewritten to "fix" it.
//
// Caveats: durability relies on fsync of files and directories as Linux
// implements them; a filesystem that lies about fsync can lose the last
// committed transactions (never half of one). Readers in other processes
// see a new transaction as soon as its commit line is written, which may
// be a moment before the writer's fsync returns.
package dirstore
