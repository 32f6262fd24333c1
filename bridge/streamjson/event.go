package streamjson

import "encoding/json"

// Kind says what an Event is.
type Kind string

const (
	KindInit       Kind = "init"        // system/init: session id, model, tools
	KindText       Kind = "text"        // assistant text
	KindThinking   Kind = "thinking"    // assistant thinking
	KindToolUse    Kind = "tool_use"    // the assistant calls a tool
	KindToolResult Kind = "tool_result" // a tool's answer
	KindUserText   Kind = "user_text"   // user text replayed into the stream
	KindResult     Kind = "result"      // the turn ended
	KindSystem     Kind = "system"      // another system line (status, compact_boundary, permission_denied, …)
	KindBridge     Kind = "bridge"      // a line the bridge itself wrote
	KindUnknown    Kind = "unknown"     // anything else, kept verbatim
)

// Event is one typed piece of a line; one line can hold several (an
// assistant message with text and two tool calls gives three events).
type Event struct {
	Kind      Kind
	SessionID string
	// Subtype is the line's subtype for system, result and bridge lines.
	Subtype string
	// Model and CWD and Tools come with KindInit.
	Model string
	CWD   string
	Tools []string
	// Text is the text of KindText, KindThinking and KindUserText.
	Text       string
	ToolUse    *ToolUse
	ToolResult *ToolResult
	Result     *Result
	// Raw is the whole line the event came from, as it was.
	Raw json.RawMessage
}

// ToolUse is a tool call.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
	// FilePath is the file an Edit, MultiEdit, Write, Read or NotebookEdit
	// call touches; Command is a Bash call's command.
	FilePath string
	Command  string
}

// ToolResult is a tool's answer, with its content flattened to text.
type ToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// Result closes a turn.
type Result struct {
	Subtype       string // success, error_max_turns, error_during_execution, …
	IsError       bool
	Text          string
	DurationMS    int64
	APIDurationMS int64
	NumTurns      int
	CostUSD       float64
	Usage         Usage
	// Errors are the error messages Claude Code reported, if any.
	Errors []string
	// PermissionDenials counts tool calls refused for want of permission.
	PermissionDenials int
}

// Usage is token accounting.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}
