// Package views projects what a reconcile pass saw into files for people
// and tools to read: views/fleet.json, views/STATUS.md and one
// transcripts/<id>.md per spore (docs/views.md says what each holds).
//
// Views are never authoritative: each is a pure function of a pass's
// Result and the store's event log, so deleting any of them loses nothing
// and the next projection rebuilds it. Each file is replaced atomically
// (a temporary file in the same directory; one sync of them all; rename;
// fsync of the directory) and only when its bytes change, so a projection with nothing
// changed writes nothing, and two projections of the same state give the
// same bytes. A transcript that holds the log up to an older event has
// the new ones appended in place instead, under a lock, ending with a
// stamp that tells a torn append; the bytes are those of rendering it
// whole.
//
// A projection must never use anything but a validated spore id as a file
// name, never read a store for writing, and never touch a file in its
// directory that is not one of its views.
package views
