package fakeapi

import (
	"encoding/json"
	"time"
)

// Reply is one scripted answer to one Messages API request.
type Reply struct {
	// Text is streamed as a text block (in a few deltas).
	Text string
	// Tool, when set, follows Text as a tool_use block; the turn then stops
	// with stop_reason "tool_use" and Claude Code runs the tool.
	Tool *ToolUse
	// Delay is slept before the first event, so a turn stays "working".
	// The wait ends early when the client goes away.
	Delay time.Duration
	// Status, when non-zero, answers with this HTTP status and an API error
	// body instead of a message (e.g. 400, 500, 529).
	Status int
	// ErrorType is the error body's type ("api_error" when empty).
	ErrorType string
	// Usage, when set, is what the answer says it used; else 100 input
	// tokens and about one output token per 4 characters of text.
	Usage *Usage
	// Pause is slept between one streamed event and the next (after
	// message_start, between deltas), so a test can act while a stream is
	// half sent. The wait ends early when the client goes away.
	Pause time.Duration
}

// Usage is a reply's token usage, as the Messages API reports it: the
// input, cache writes and reads in message_start, the output in
// message_delta (and all of it in a whole answer).
type Usage struct {
	Input, Output, CacheCreation, CacheRead int
}

// ToolUse is a tool call the model asks for.
type ToolUse struct {
	Name  string
	Input any
}

// Rule scripts a conversation: when the newest user prompt contains Match,
// the first request after it is answered by Steps[0], the next (after a
// tool result) by Steps[1], and so on. Requests beyond the last step get a
// plain "done" text, so a turn always ends.
type Rule struct {
	Match string
	Steps []Reply
}

// Text is a reply made of text only.
func Text(s string) Reply { return Reply{Text: s} }

// Write is a reply asking Claude Code to write content to path.
func Write(path, content string) Reply {
	return Reply{Tool: &ToolUse{Name: "Write", Input: map[string]string{"file_path": path, "content": content}}}
}

// Bash is a reply asking Claude Code to run a shell command.
func Bash(command string) Reply {
	return Reply{Tool: &ToolUse{Name: "Bash", Input: map[string]string{"command": command, "description": "run a command"}}}
}

// Slow is a text reply that starts only after d.
func Slow(d time.Duration, s string) Reply { return Reply{Text: s, Delay: d} }

// Spending is r saying it used u.
func (r Reply) Spending(u Usage) Reply { r.Usage = &u; return r }

// Streaming is r streamed with pause between its events.
func (r Reply) Streaming(pause time.Duration) Reply { r.Pause = pause; return r }

// Error is a reply that fails with an HTTP status.
func Error(status int) Reply { return Reply{Status: status} }

// usage is what r says it used: its own, else the default.
func (r Reply) usage() Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	return Usage{Input: 100, Output: len(r.Text)/4 + 1}
}

func (r Reply) inputJSON() string {
	if r.Tool == nil {
		return "{}"
	}
	b, err := json.Marshal(r.Tool.Input)
	if err != nil {
		return "{}"
	}
	return string(b)
}
