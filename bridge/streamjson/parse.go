package streamjson

import (
	"encoding/json"
	"strings"
)

// wire is the union of the line shapes this package reads.
type wire struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	SessionID string   `json:"session_id"`
	Model     string   `json:"model"`
	CWD       string   `json:"cwd"`
	Tools     []string `json:"tools"`
	// Message is an object for assistant and user lines, a string on
	// some system lines.
	Message json.RawMessage `json:"message"`
	// result
	IsError           bool              `json:"is_error"`
	Result            string            `json:"result"`
	DurationMS        int64             `json:"duration_ms"`
	DurationAPIMS     int64             `json:"duration_api_ms"`
	NumTurns          int               `json:"num_turns"`
	TotalCostUSD      float64           `json:"total_cost_usd"`
	Usage             Usage             `json:"usage"`
	Errors            json.RawMessage   `json:"errors"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Parse reads one line. It always returns at least one event, and every
// event carries the line in Raw.
func Parse(line []byte) []Event {
	raw := json.RawMessage(line)
	var w wire
	if err := json.Unmarshal(line, &w); err != nil || w.Type == "" {
		return []Event{{Kind: KindUnknown, Raw: raw}}
	}
	base := Event{SessionID: w.SessionID, Subtype: w.Subtype, Raw: raw}
	switch w.Type {
	case "system":
		if w.Subtype == "init" {
			base.Kind, base.Model, base.CWD, base.Tools = KindInit, w.Model, w.CWD, w.Tools
			return []Event{base}
		}
		base.Kind = KindSystem
		return []Event{base}
	case "result":
		base.Kind = KindResult
		base.Result = &Result{
			Subtype: w.Subtype, IsError: w.IsError, Text: w.Result, DurationMS: w.DurationMS,
			APIDurationMS: w.DurationAPIMS, NumTurns: w.NumTurns, CostUSD: w.TotalCostUSD, Usage: w.Usage,
			Errors: errorsOf(w.Errors), PermissionDenials: len(w.PermissionDenials),
		}
		return []Event{base}
	case "bridge":
		base.Kind = KindBridge
		return []Event{base}
	case "assistant", "user":
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(w.Message, &m) != nil {
			break
		}
		if evs := content(base, w.Type, m.Content); len(evs) > 0 {
			return evs
		}
	}
	base.Kind = KindUnknown
	return []Event{base}
}

// content splits a message's content into events.
func content(base Event, role string, c json.RawMessage) []Event {
	var s string
	if json.Unmarshal(c, &s) == nil {
		e := base
		e.Kind, e.Text = textKind(role), s
		return []Event{e}
	}
	var blocks []block
	if json.Unmarshal(c, &blocks) != nil {
		return nil
	}
	var out []Event
	for _, b := range blocks {
		e := base
		switch b.Type {
		case "text":
			e.Kind, e.Text = textKind(role), b.Text
		case "thinking":
			e.Kind, e.Text = KindThinking, b.Thinking
		case "tool_use", "server_tool_use":
			e.Kind = KindToolUse
			e.ToolUse = toolUse(b)
		case "tool_result":
			e.Kind = KindToolResult
			e.ToolResult = &ToolResult{ToolUseID: b.ToolUseID, Content: flatten(b.Content), IsError: b.IsError}
		default:
			e.Kind = KindUnknown
		}
		out = append(out, e)
	}
	return out
}

func textKind(role string) Kind {
	if role == "user" {
		return KindUserText
	}
	return KindText
}

func toolUse(b block) *ToolUse {
	t := &ToolUse{ID: b.ID, Name: b.Name, Input: b.Input}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Command      string `json:"command"`
	}
	_ = json.Unmarshal(b.Input, &in)
	switch b.Name {
	case "Edit", "MultiEdit", "Write", "Read":
		t.FilePath = in.FilePath
	case "NotebookEdit":
		t.FilePath = in.NotebookPath
	case "Bash":
		t.Command = in.Command
	}
	return t
}

// flatten turns a tool result's content (a string, or a list of blocks)
// into text; other block types are skipped.
func flatten(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(c, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// errorsOf accepts the result's "errors" as a list of strings or of
// objects with a message.
func errorsOf(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return ss
	}
	var objs []struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &objs) == nil {
		for _, o := range objs {
			ss = append(ss, o.Message)
		}
	}
	return ss
}
