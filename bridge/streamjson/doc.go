// Package streamjson reads Claude Code's stream-json output (one JSON
// object per line, from `claude -p --output-format stream-json --verbose`)
// into typed conversation events: the session's init, assistant text, tool
// calls (with the file path of Edit/Write/Read and the command of Bash),
// tool results, and the turn's result (cost, usage, duration, errors).
//
// It never drops a line: a line of a type it does not know, or one that is
// not even JSON, becomes an event of kind KindUnknown carrying the line
// verbatim. It never fails and never looks at anything but the line.
package streamjson
