package transcript

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge/streamjson"
)

// agentLines reads one agent line (Claude Code's stream-json, a line the
// bridge wrote, or a JSON string where the agent wrote no JSON).
func agentLines(base Line, line json.RawMessage) []Line {
	var out []Line
	add := func(k Kind, text string, isErr bool) {
		l := base
		l.Kind, l.Text, l.Error = k, text, isErr
		out = append(out, l)
	}
	for _, e := range streamjson.Parse(line) {
		switch e.Kind {
		case streamjson.KindInit:
			add(KindSession, session(e), false)
		case streamjson.KindText, streamjson.KindUserText:
			if t := trimText(e.Text); strings.TrimSpace(t) != "" {
				k := KindText
				if e.Kind == streamjson.KindUserText {
					k = KindUserText
				}
				add(k, clean(t, true), false)
			}
		case streamjson.KindThinking:
			if strings.TrimSpace(e.Text) != "" {
				add(KindThinking, oneLine(e.Text, Width), false)
			}
		case streamjson.KindToolUse:
			add(KindToolUse, toolCall(e.ToolUse), false)
		case streamjson.KindToolResult:
			add(KindToolResult, toolResult(e.ToolResult), e.ToolResult.IsError)
		case streamjson.KindResult:
			add(KindResult, oneLine(turnResult(e.Result), 4*Width), failed(e.Result))
		case streamjson.KindSystem:
			add(KindSystem, oneLine(system(e), Width), false)
		case streamjson.KindBridge:
			text, isErr := bridgeLine(e)
			add(KindBridge, oneLine(text, Width), isErr)
		default:
			add(KindRaw, rawLine(line), false)
		}
	}
	if len(out) == 0 {
		// Only empty text blocks: say so rather than show nothing.
		add(KindRaw, rawLine(line), false)
	}
	return out
}

func session(e streamjson.Event) string {
	s := "session started"
	if e.SessionID != "" {
		s = "session " + e.SessionID
	}
	if e.Model != "" {
		s += " · model " + e.Model
	}
	return oneLine(s, Width)
}

// toolInputKeys are the inputs that say best what a call does, for tools
// streamjson does not single out (any but the file tools and Bash, and
// those under a name it does not know), in order of preference.
var toolInputKeys = []string{"file_path", "command", "pattern", "url", "query", "description", "path", "prompt", "skill", "subject"}

// toolCall summarises a call on one line: "Edit path/to/file",
// "Bash: go test ./...", "Grep: func main".
func toolCall(t *streamjson.ToolUse) string {
	name := strings.TrimSpace(t.Name)
	if name == "" {
		name = "tool"
	}
	switch {
	case t.FilePath != "":
		return oneLine(name+" "+t.FilePath, Width)
	case t.Command != "":
		return oneLine(name+": "+t.Command, Width)
	}
	var in map[string]json.RawMessage
	_ = json.Unmarshal(t.Input, &in)
	for _, k := range toolInputKeys {
		var s string
		if json.Unmarshal(in[k], &s) == nil && strings.TrimSpace(s) != "" {
			return oneLine(name+": "+s, Width)
		}
	}
	return oneLine(name, Width)
}

func toolResult(r *streamjson.ToolResult) string {
	first, more := firstLine(r.Content)
	if first == "" {
		return "(no output)"
	}
	s := truncate(clean(first, false), Width)
	if more > 0 {
		s += fmt.Sprintf(" (+%d lines)", more)
	}
	return s
}

// turnResult: "done · 178ms · 3 turns · $0.0013 · tokens 200 in, 4 out,
// 7 cache read", or "failed (error_during_execution): API Error: 500 · …".
func turnResult(r *streamjson.Result) string {
	head := "done"
	if failed(r) {
		sub := r.Subtype
		if sub == "" {
			sub = "error"
		}
		head = "failed (" + sub + ")"
		if len(r.Errors) > 0 {
			head += ": " + strings.Join(r.Errors, "; ")
		}
	}
	parts := []string{"turn " + head}
	if r.DurationMS > 0 {
		parts = append(parts, duration(r.DurationMS))
	}
	if r.NumTurns > 0 {
		parts = append(parts, plural(r.NumTurns, "turn"))
	}
	if r.CostUSD > 0 {
		parts = append(parts, cost(r.CostUSD))
	}
	if t := tokens(r.Usage); t != "" {
		parts = append(parts, t)
	}
	if r.PermissionDenials > 0 {
		parts = append(parts, plural(r.PermissionDenials, "permission denial"))
	}
	return strings.Join(parts, " · ")
}

// failed: Claude Code says so, or the turn ended other than in success
// (error_max_turns, error_during_execution, …).
func failed(r *streamjson.Result) bool {
	return r.IsError || r.Subtype != "" && r.Subtype != "success"
}

func duration(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + "ms"
	case ms < 60_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
	}
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}

func cost(usd float64) string {
	if usd < 0.0001 {
		return "<$0.0001"
	}
	s := strconv.FormatFloat(usd, 'f', 4, 64)
	// Keep cents, drop zeros past them: $1.50, $0.0013.
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return "$" + s
}

func tokens(u streamjson.Usage) string {
	var parts []string
	for _, p := range []struct {
		n    int64
		what string
	}{{u.InputTokens, "in"}, {u.OutputTokens, "out"}, {u.CacheReadInputTokens, "cache read"}, {u.CacheCreationInputTokens, "cache write"}} {
		if p.n > 0 {
			parts = append(parts, strconv.FormatInt(p.n, 10)+" "+p.what)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "tokens " + strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// system: "permission_denied: Claude requested permissions to use Bash, …".
func system(e streamjson.Event) string {
	var f struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(e.Raw, &f)
	s := e.Subtype
	if s == "" {
		s = "system"
	}
	var msg string
	if json.Unmarshal(f.Message, &msg) == nil && strings.TrimSpace(msg) != "" {
		s += ": " + msg
	}
	return s
}

// bridgeLine reads the lines the bridge writes about itself (docs/bridge.md
// "Lines the bridge writes").
func bridgeLine(e streamjson.Event) (string, bool) {
	var f struct {
		Agent         string `json:"agent"`
		SessionID     string `json:"session_id"`
		Queue         int    `json:"queue"`
		From          string `json:"from"`
		Attempt       int    `json:"attempt"`
		Attempts      int    `json:"attempts"`
		Exit          string `json:"exit"`
		WillRetry     bool   `json:"will_retry"`
		RestartInMS   int64  `json:"restart_in_ms"`
		OriginalBytes int64  `json:"original_bytes"`
		Head          string `json:"head"`
	}
	_ = json.Unmarshal(e.Raw, &f)
	switch e.Subtype {
	case "bridge_started":
		s := "bridge started"
		if f.Agent != "" {
			s += " · agent " + f.Agent
		}
		if f.Queue > 0 {
			s += " · " + plural(f.Queue, "prompt") + " queued"
		}
		return s, false
	case "turn_started":
		s := "turn started"
		if f.From != "" {
			s += " for " + f.From
		}
		if f.Attempt > 1 {
			s += fmt.Sprintf(" (attempt %d)", f.Attempt)
		}
		return s, false
	case "agent_exited":
		s := "agent exited mid-turn"
		if f.Exit != "" {
			s += ": " + f.Exit
		}
		if f.WillRetry {
			s += " · retry in " + duration(f.RestartInMS)
		}
		return s, true
	case "prompt_abandoned":
		return fmt.Sprintf("prompt abandoned after %s", plural(f.Attempts, "attempt")), true
	case "interrupted":
		return "turn interrupted", false
	case "line_truncated":
		s := fmt.Sprintf("line of %d bytes truncated by the bridge", f.OriginalBytes)
		if f.Head != "" {
			s += "; it began: " + f.Head
		}
		return s, false
	}
	s := "bridge"
	if e.Subtype != "" {
		s += " " + e.Subtype
	}
	return s, false
}
