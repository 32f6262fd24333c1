// Package eventlog owns the bridge's numbered log: every line the agent
// (or the bridge itself) wrote, numbered 1, 2, 3, … and appended to one
// file in the spore's home, fsync'd per batch before anyone may read it.
//
// Invariants (docs/bridge.md, "The log"):
//   - numbers start at 1 and never repeat or skip, across restarts;
//   - a number is visible to readers only after its batch is fsync'd;
//   - a torn tail (an unfinished or corrupt last record, left by a crash)
//     is dropped on open; a bad record anywhere else is an error naming the
//     file and line, and nothing is rewritten to "fix" it;
//   - every stored line is valid UTF-8 JSON without a newline (Normalize
//     makes any agent output so).
//
// Reading after N uses a sparse in-memory index (one offset every
// IndexEvery records), so memory and the cost of a read stay bounded however
// long the log grows. The package never interprets the lines it stores.
package eventlog
