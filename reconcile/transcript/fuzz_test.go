package transcript

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// controlAt returns the index of the first byte of out that must never
// reach a terminal raw — a C0 control other than "\n", DEL, a C1 control
// or a bidirectional override — or of invalid UTF-8; -1 when none.
func controlAt(out []byte) int {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i
		case r < 0x20 && r != '\n', r == 0x7f, unsafeRune(r):
			return i
		}
		i += size
	}
	return -1
}

func requireNoControls(t *testing.T, out []byte) {
	t.Helper()
	if i := controlAt(out); i >= 0 {
		t.Fatalf("raw control or invalid UTF-8 at byte %d: %q", i, out[max(0, i-20):min(len(out), i+20)])
	}
}

var fuzzKinds = []state.EventKind{state.KindAgent, state.KindPrompt, state.KindMessage, state.KindLifecycle, state.KindBreaker, "other"}

// FuzzLines: no event makes Lines, WriteText or Markdown panic, and none
// makes them emit a raw control character (ESC included) or invalid UTF-8.
func FuzzLines(f *testing.F) {
	f.Add(uint8(0), "", "", "", []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\u001b[31m\r\n\tb"},{"type":"tool_use","name":"Bash","input":{"command":"x\u0000"}}]}}`))
	f.Add(uint8(0), "", "", "", []byte(`{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"\u009b2J"}]}]}}`))
	f.Add(uint8(0), "", "", "", []byte(`{"type":"result","subtype":"error_during_execution","errors":[{"message":"\u001b]0;x\u0007"}]}`))
	f.Add(uint8(0), "", "", "", []byte(`{"type":"bridge","subtype":"line_truncated","original_bytes":9,"head":"\u001b"}`))
	f.Add(uint8(0), "", "", "", []byte("\"bad \xff\x1b\""))
	f.Add(uint8(0), "", "", "", []byte("\x1b[2J\r\x00"))
	f.Add(uint8(1), "user:\x1b[2Jeve", "", "hi\x1b[31m\r\nthere\u202e", []byte(nil))
	f.Add(uint8(2), "spore:x\n", "", "```\n<script>", []byte(nil))
	f.Add(uint8(3), "", "woke\x07", "a\tb\xff", []byte(nil))
	f.Add(uint8(5), "\x00", "\x1b", "\x9b", []byte("\x1b"))
	f.Fuzz(func(t *testing.T, kind uint8, from, action, text string, line []byte) {
		ev := state.Event{Seq: 1, At: time.Unix(0, 0), Kind: fuzzKinds[int(kind)%len(fuzzKinds)],
			From: from, Action: action, Text: text, Line: json.RawMessage(line)}
		lines := Lines(ev)
		if len(lines) == 0 {
			t.Fatal("no line for an event")
		}
		for _, l := range lines {
			for _, s := range []string{l.From, l.Text} {
				if i := controlAt([]byte(s)); i >= 0 {
					t.Fatalf("%s line holds a control at %d: %q", l.Kind, i, s)
				}
			}
			if !l.Multiline() && bytes.ContainsRune([]byte(l.Text+l.From), '\n') {
				t.Fatalf("one-line %s line has a newline: %q", l.Kind, l.Text)
			}
		}
		var out bytes.Buffer
		if err := WriteText(&out, []state.Event{ev}, TextOptions{Timestamps: true}); err != nil {
			t.Fatal(err)
		}
		requireNoControls(t, out.Bytes())
		out.Reset()
		if err := Markdown(&out, "x", []state.Event{ev}); err != nil {
			t.Fatal(err)
		}
		requireNoControls(t, out.Bytes())
	})
}
