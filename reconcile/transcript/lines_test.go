package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

var at = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func agent(line string) state.Event {
	return state.Event{Seq: 7, At: at, Kind: state.KindAgent, BridgeSeq: 3, Line: json.RawMessage(line)}
}

func TestLines(t *testing.T) {
	type L = Line
	l := func(k Kind, text string) L { return L{Seq: 7, At: at, Kind: k, Text: text} }
	bad := func(x L) L { x.Error = true; return x }
	from := func(x L, f string) L { x.From = f; return x }
	long := strings.Repeat("x", 200)
	cases := []struct {
		name string
		ev   state.Event
		want []L
	}{
		{"prompt", state.Event{Seq: 7, At: at, Kind: state.KindPrompt, From: "user:alice", Text: "hi\nthere\n\n"},
			[]L{from(l(KindPrompt, "hi\nthere"), "user:alice")}},
		{"message", state.Event{Seq: 7, At: at, Kind: state.KindMessage, From: "spore:lab-myco", Text: "run tests"},
			[]L{from(l(KindMessage, "run tests"), "spore:lab-myco")}},
		{"lifecycle", state.Event{Seq: 7, At: at, Kind: state.KindLifecycle, Action: "woke"},
			[]L{l(KindLifecycle, "woke")}},
		{"lifecycle with text", state.Event{Seq: 7, At: at, Kind: state.KindLifecycle, Action: "restarted", Text: "after OOMKilled"},
			[]L{l(KindLifecycle, "restarted: after OOMKilled")}},
		{"lifecycle without action", state.Event{Seq: 7, At: at, Kind: state.KindLifecycle},
			[]L{l(KindLifecycle, "lifecycle")}},
		{"breaker", state.Event{Seq: 7, At: at, Kind: state.KindBreaker, Action: "opened", Text: "5 crashes in 10m"},
			[]L{l(KindBreaker, "breaker opened: 5 crashes in 10m")}},
		{"unknown kind", state.Event{Seq: 7, At: at, Kind: "sprocket", Text: "x"},
			[]L{l(KindRaw, `event of unknown kind "sprocket": x`)}},
		{"init", agent(`{"type":"system","subtype":"init","session_id":"s-1","model":"m"}`),
			[]L{l(KindSession, "session s-1 · model m")}},
		{"text and tool", agent(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\n  b\n"},{"type":"tool_use","name":"Edit","input":{"file_path":"x/y.go"}}]}}`),
			[]L{l(KindText, "a\n  b"), l(KindToolUse, "Edit x/y.go")}},
		{"bash", agent(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./...\nmake"}}]}}`),
			[]L{l(KindToolUse, "Bash: go test ./... …")}},
		{"long bash", agent(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"` + long + `"}}]}}`),
			[]L{l(KindToolUse, "Bash: "+strings.Repeat("x", Width-7)+"…")}},
		{"other tool", agent(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"WebFetch","input":{"url":"https://x","prompt":"p"}}]}}`),
			[]L{l(KindToolUse, "WebFetch: https://x")}},
		{"bare tool", agent(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"TodoWrite","input":{"todos":[]}}]}}`),
			[]L{l(KindToolUse, "TodoWrite")}},
		{"thinking", agent(`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"\nhmm\nmore"}]}}`),
			[]L{l(KindThinking, "hmm …")}},
		{"tool result", agent(`{"type":"user","message":{"content":[{"type":"tool_result","content":"ok\nline 2\nline 3"}]}}`),
			[]L{l(KindToolResult, "ok (+2 lines)")}},
		{"tool error", agent(`{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"denied"}]}]}}`),
			[]L{bad(l(KindToolResult, "denied"))}},
		{"empty tool result", agent(`{"type":"user","message":{"content":[{"type":"tool_result","content":""}]}}`),
			[]L{l(KindToolResult, "(no output)")}},
		{"user text", agent(`{"type":"user","message":{"content":"again"}}`),
			[]L{l(KindUserText, "again")}},
		{"result", agent(`{"type":"result","subtype":"success","duration_ms":178,"num_turns":1,"total_cost_usd":0.0013,"usage":{"input_tokens":200,"output_tokens":4,"cache_read_input_tokens":7}}`),
			[]L{l(KindResult, "turn done · 178ms · 1 turn · $0.0013 · tokens 200 in, 4 out, 7 cache read")}},
		{"echo result", agent(`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0,"duration_ms":0,"usage":{"input_tokens":0}}`),
			[]L{l(KindResult, "turn done")}},
		{"error result", agent(`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["API Error: 500"],"duration_ms":65432,"total_cost_usd":1.5}`),
			[]L{bad(l(KindResult, "turn failed (error_during_execution): API Error: 500 · 1m5s · $1.50"))}},
		{"max turns", agent(`{"type":"result","subtype":"error_max_turns","duration_ms":5500}`),
			[]L{bad(l(KindResult, "turn failed (error_max_turns) · 5.5s"))}},
		{"system", agent(`{"type":"system","subtype":"permission_denied","message":"no Bash"}`),
			[]L{l(KindSystem, "permission_denied: no Bash")}},
		{"system without message", agent(`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"manual"}}`),
			[]L{l(KindSystem, "compact_boundary")}},
		{"truncated line", agent(`{"type":"bridge","subtype":"line_truncated","original_bytes":2000000,"head":"{\"type\":\"us"}`),
			[]L{l(KindBridge, `line of 2000000 bytes truncated by the bridge; it began: {"type":"us`)}},
		{"agent died", agent(`{"type":"bridge","subtype":"agent_exited","exit":"exit status 1","will_retry":true,"restart_in_ms":2000}`),
			[]L{bad(l(KindBridge, "agent exited mid-turn: exit status 1 · retry in 2.0s"))}},
		{"abandoned", agent(`{"type":"bridge","subtype":"prompt_abandoned","attempts":3}`),
			[]L{bad(l(KindBridge, "prompt abandoned after 3 attempts"))}},
		{"new bridge line", agent(`{"type":"bridge","subtype":"something_new"}`),
			[]L{l(KindBridge, "bridge something_new")}},
		{"not json", agent(`"not json at all"`),
			[]L{l(KindRaw, "not json at all")}},
		{"invalid json", agent("{\"type\":\xff"),
			[]L{l(KindRaw, "{\"type\":\uFFFD")}},
		{"empty line", agent(""),
			[]L{l(KindRaw, "(empty line)")}},
		{"unknown type", agent(`{"type":"stream_event","event":{}}`),
			[]L{l(KindRaw, `{"type":"stream_event","event":{}}`)}},
		{"empty text only", agent(`{"type":"assistant","message":{"content":[{"type":"text","text":"  "}]}}`),
			[]L{l(KindRaw, `{"type":"assistant","message":{"content":[{"type":"text","text":"  "}]}}`)}},
		{"hostile", state.Event{Seq: 7, At: at, Kind: state.KindPrompt, From: "user:e\x1b[2J\nx", Text: "a\x1b[31mb\rc\r\nd\x00\te\u009b\u202e\xff"},
			[]L{from(l(KindPrompt, "a\\x1b[31mb\\rc\nd\\x00   e\\u009b\\u202e\uFFFD"), `user:e\x1b[2J\nx`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, Lines(c.ev)); d != "" {
				t.Errorf("Lines (-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteTextContinuation(t *testing.T) {
	evs := []state.Event{
		{Seq: 3, At: at, Kind: state.KindPrompt, From: "user:alice", Text: "one\ntwo"},
		agent(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\n\n  b"}]}}`),
		{Seq: 1234567, At: at, Kind: state.KindLifecycle, Action: "slept"},
	}
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, evs, TextOptions{}))
	require.Equal(t, ""+
		"     3  > [user:alice] one\n"+
		"                       two\n"+
		"     7  a\n"+
		"\n"+
		"          b\n"+
		"1234567  — slept\n", b.String())

	b.Reset()
	require.NoError(t, WriteText(&b, evs[:1], TextOptions{Timestamps: true}))
	require.Equal(t, ""+
		"     3  2026-05-01 10:00:00  > [user:alice] one\n"+
		"                                            two\n", b.String())
}

func TestEscapeMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"worker-7":                  "worker-7",
		"<script>alert(1)</script>": `\<script\>alert(1)\</script\>`,
		"a|b\nc":                    `a\|b\\nc`,
		"# x #":                     `\# x \#`,
		"- item":                    `\- item`,
		"1. item":                   `1\. item`,
		"9.5s":                      `9\.5s`,
		"*a* _b_ `c` [d](e) ~f~ &g": "\\*a\\* \\_b\\_ \\`c\\` \\[d\\](e) \\~f\\~ \\&g",
		"\x1b[31m":                  `\\x1b\[31m`,
	} {
		require.Equal(t, want, EscapeMarkdown(in), "EscapeMarkdown(%q)", in)
	}
}

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"Edit a.go":   "`Edit a.go`",
		"a`b":         "``a`b``",
		"`x`":         "`` `x` ``",
		"a ``` b":     "````a ``` b````",
		" ":           "`(empty)`",
		"<b>x</b>":    "`<b>x</b>`",
		"nul\x00here": "`nul\\x00here`",
	} {
		require.Equal(t, want, CodeSpan(in), "CodeSpan(%q)", in)
	}
}

// TestBody: agent text stays Markdown, but nothing in it can open HTML or
// leave a code block open, whatever its fences.
func TestBody(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "Hello *world*", "Hello *world*\n"},
		{"html", "<img src=x onerror=alert(1)> a<b", "&lt;img src=x onerror=alert(1)> a&lt;b\n"},
		{"fenced code kept", "```go\nif a < b {}\n```\n<b>", "```go\nif a < b {}\n```\n&lt;b>\n"},
		{"tilde fence", "~~~\n<x>\n~~~", "~~~\n<x>\n~~~\n"},
		{"unclosed fence closed", "````\n<x>", "````\n<x>\n````\n"},
		{"short run does not close", "````\n```\n<x>\n````", "````\n```\n<x>\n````\n"},
		{"closer with info does not close", "```\n```go\n<x>\n```", "```\n```go\n<x>\n```\n"},
		{"indented closer closes", "```\nx\n   ```\n<y>", "```\nx\n   ```\n&lt;y>\n"},
		{"indented opener escaped", "  ```\nx\n```\n<script>", "  \\```\nx\n```\n<script>\n```\n"},
		{"fence in list escaped", "- ```\n  <b>\n- x", "- \\```\n  &lt;b>\n- x\n"},
		{"fence in quote escaped", "> ~~~\n<b>", "> \\~~~\n&lt;b>\n"},
		{"numbered list fence escaped", "1. ```\n<b>", "1. \\```\n&lt;b>\n"},
		{"backtick in info is no fence", "```a`\n<b>", "\\```a`\n&lt;b>\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, body(c.in))
		})
	}
}

func TestSanitize(t *testing.T) {
	require.Equal(t, "plain", Sanitize("plain"))
	require.Equal(t, `a\nb\rc\x1b\x7f\u0085`, Sanitize("a\nb\rc\x1b\x7f\u0085"))
	require.Equal(t, "ab      c", Sanitize("ab\tc"))
	require.Equal(t, "\uFFFDok", Sanitize("\xffok"))
}
