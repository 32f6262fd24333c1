package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Width is the most characters a one-line summary (a tool call, a tool
// result, thinking, a system or unknown line) keeps; longer ones end in
// "…". Agent text, prompts and messages are never cut.
const Width = 120

// Kind says what a display line shows.
type Kind string

const (
	KindPrompt     Kind = "prompt"      // a person's prompt; From is the sender
	KindMessage    Kind = "message"     // a message from another spore; From is the sender
	KindText       Kind = "text"        // the agent's text, possibly several lines
	KindUserText   Kind = "user_text"   // user text the agent's stream replayed
	KindThinking   Kind = "thinking"    // the agent's thinking, first line
	KindToolUse    Kind = "tool_use"    // a tool call: "Edit path", "Bash: go test ./..."
	KindToolResult Kind = "tool_result" // a tool's answer, first line; Error when it failed
	KindResult     Kind = "result"      // a turn ended: duration, turns, cost, tokens; Error when it failed
	KindSession    Kind = "session"     // the agent's session started (system/init)
	KindSystem     Kind = "system"      // another system line (permission_denied, compact_boundary, …)
	KindBridge     Kind = "bridge"      // a line the bridge wrote about itself
	KindLifecycle  Kind = "lifecycle"   // the store changed the spore (created, woke, …)
	KindBreaker    Kind = "breaker"     // the circuit breaker opened, closed or backed off
	KindRaw        Kind = "raw"         // a line not understood, shown as text
)

// Line is one line of the conversation as a person reads it. Its From and
// Text are safe to display: valid UTF-8 with no control character other
// than "\n", which only Multiline kinds contain.
type Line struct {
	Seq  uint64    // the store's number of the event the line came from
	At   time.Time // when the store recorded the event
	Kind Kind
	From string // the sender of a prompt or message
	Text string
	// Error marks a failed tool call, a failed turn, an agent that died.
	Error bool
}

// Multiline reports whether l's Text may span several lines.
func (l Line) Multiline() bool {
	switch l.Kind {
	case KindText, KindUserText, KindPrompt, KindMessage:
		return true
	}
	return false
}

// Lines turns one stored event into the lines a person reads; it returns
// at least one line for every event, whatever it holds, and never panics.
// An agent event whose line holds several pieces (text and two tool calls)
// gives several lines with the same Seq.
func Lines(ev state.Event) []Line {
	base := Line{Seq: ev.Seq, At: ev.At, Kind: KindRaw}
	with := func(k Kind, text string) []Line {
		l := base
		l.Kind, l.Text = k, text
		return []Line{l}
	}
	switch ev.Kind {
	case state.KindPrompt, state.KindMessage:
		l := base
		l.Kind = KindPrompt
		if ev.Kind == state.KindMessage {
			l.Kind = KindMessage
		}
		l.From = clean(ev.From, false)
		l.Text = clean(trimText(ev.Text), true)
		return []Line{l}
	case state.KindLifecycle:
		return with(KindLifecycle, note("", ev))
	case state.KindBreaker:
		return with(KindBreaker, note("breaker ", ev))
	case state.KindAgent:
		return agentLines(base, ev.Line)
	}
	what := fmt.Sprintf("event of unknown kind %q", ev.Kind)
	for _, s := range []string{ev.Action, ev.From, ev.Text, string(ev.Line)} {
		if s != "" {
			what += ": " + s
		}
	}
	return with(KindRaw, oneLine(what, Width))
}

// note is a lifecycle or breaker event's line: "woke: desired Paused →
// Running", "breaker opened: …".
func note(prefix string, ev state.Event) string {
	action := strings.TrimSpace(ev.Action)
	if action == "" {
		action = string(ev.Kind)
	}
	s := prefix + action
	if t := strings.TrimSpace(ev.Text); t != "" {
		s += ": " + t
	}
	return clean(s, false)
}

// trimText drops blank lines before and trailing blanks after the text,
// keeping the first line's indentation.
func trimText(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 || strings.TrimSpace(s[:nl]) != "" {
			return s
		}
		s = s[nl+1:]
	}
}

// rawLine shows a line that is not a conversation line: a JSON string (the
// agent wrote something that was not JSON) as its text, anything else as
// it is.
func rawLine(line json.RawMessage) string {
	var s string
	if json.Unmarshal(line, &s) == nil {
		return oneLine(s, Width)
	}
	if len(line) == 0 {
		return "(empty line)"
	}
	return oneLine(string(line), Width)
}
