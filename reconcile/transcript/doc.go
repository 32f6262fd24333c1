// Package transcript turns a spore's stored event log into the
// conversation as a person reads it: prompts with their senders, the
// agent's text, one line per tool call and tool result, turn results with
// their cost, lifecycle and breaker notes. It renders that for a terminal
// (WriteText, for `sporectl chat`) and as Markdown (Markdown, for
// views/transcripts/<id>.md).
//
// Everything it shows came from an agent, a person or another spore, so
// none of it is trusted: Lines makes every field safe to display (valid
// UTF-8; control characters, ANSI escape sequences and bidirectional
// overrides written out visibly, never raw), and Markdown escapes what
// could break out of the document's structure (HTML tags, unbalanced code
// fences). A line it does not understand is shown as text, never dropped.
//
// It only reads events; it never touches a store, and its output is a
// pure function of the events (no clock, no environment), so the same
// events always give the same bytes.
package transcript
