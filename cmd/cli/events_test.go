package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestEventsTableShowsControlsEscaped: the events table shows every
// control character of an event's text as the visible escape docs/cli.md
// promises (ESC as \x1b, BEL as \x07), never raw and never blanked; runs
// of ordinary white space fold into one space; -o json keeps the text
// exactly.
func TestEventsTableShowsControlsEscaped(t *testing.T) {
	agent := func(text string) state.Event {
		b, err := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
		require.NoError(t, err)
		return state.Event{Seq: 1, Kind: state.KindAgent, Line: b}
	}
	prompt := func(text string) state.Event { return state.Event{Seq: 1, Kind: state.KindPrompt, Text: text} }
	cases := []struct {
		name string
		ev   state.Event
		want string // the SUMMARY cell
	}{
		{"agent escape sequence", agent("hi \x1b[2J\x1b]0;pwned\x07 there"), `assistant: hi \x1b[2J\x1b]0;pwned\x07 there`},
		{"prompt NUL and DEL", prompt("a\x00b\x7fc"), `a\x00b\x7fc`},
		{"vertical tab and form feed", prompt("a\vb\fc"), `a\x0bb\x0cc`},
		{"C1 controls", prompt("csi \u009b31m nel \u0085"), `csi \u009b31m nel \u0085`},
		{"bidi override", prompt("abc \u202edcba"), `abc \u202edcba`},
		{"line separator", prompt("one\u2028two"), `one\u2028two`},
		{"white space folds", prompt("  one\r\n\ttwo\n\nthree  "), `one two three`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, printTo(&buf, "wide", true, eventList{Spore: "a", LastSeq: 1, Events: []state.Event{c.ev}}))
			line := strings.TrimSuffix(buf.String(), "\n")
			require.NotContains(t, line, "\n")
			_, bad := rawUnsafe(line)
			require.False(t, bad, "raw control character in %q", line)
			require.True(t, strings.HasSuffix(line, "   "+c.want), "summary of %q: got line %q, want it to end in %q", c.ev.Text, line, c.want)

			buf.Reset()
			require.NoError(t, printTo(&buf, "json", false, eventList{Spore: "a", LastSeq: 1, Events: []state.Event{c.ev}}))
			var back eventList
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
			require.Equal(t, c.ev.Text, back.Events[0].Text, "-o json keeps the text exactly")
			if len(c.ev.Line) > 0 {
				require.JSONEq(t, string(c.ev.Line), string(back.Events[0].Line))
			}
		})
	}
}
