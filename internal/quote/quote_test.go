package quote

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestValue(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"short", "lots", `"lots"`},
		{"empty", "", `""`},
		{"control characters escaped", "a\x1b[31m", `"a\x1b[31m"`},
		{"exactly Max", strings.Repeat("a", Max), `"` + strings.Repeat("a", Max) + `"`},
		{"one past Max", strings.Repeat("a", Max+1), `"` + strings.Repeat("a", Max) + `"… (65 bytes)`},
		{"cut between two characters", strings.Repeat("a", Max-1) + "é" + "b", `"` + strings.Repeat("a", Max-1) + `"… (66 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Value(tt.in))
		})
	}
}

func TestValueOfThirtyMegabytes(t *testing.T) {
	v := strings.Repeat("\x00", 30<<20)
	got := Value(v)
	require.Less(t, len(got), 300, "at most Max bytes, escaped, and the length")
	require.True(t, strings.HasSuffix(got, "… (31457280 bytes)"), got)
}

func TestMessage(t *testing.T) {
	huge := strings.Repeat("x", 30<<20)
	path := "/tmp/" + strings.Repeat("d", 200) + "/store/events/w1.3.log"
	tests := []struct{ name, in, want string }{
		{"short passes", "open /tmp/a: no such file", "open /tmp/a: no such file"},
		{"a long path passes", "open " + path + ": no such file", "open " + path + ": no such file"},
		{"a huge run is cut, the rest kept", "open /" + huge + ": file name too long",
			"open /" + strings.Repeat("x", Max-1) + "…(31457281 bytes): file name too long"},
		{"line breaks kept", "a\n" + huge + "\nb", "a\n" + strings.Repeat("x", Max) + "…(31457280 bytes)\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Message(tt.in))
		})
	}
}

func TestMessageOfManyWordsIsBounded(t *testing.T) {
	in := "start " + strings.Repeat("word ", 1<<20) + "end"
	got := Message(in)
	require.LessOrEqual(t, len(got), MaxMessage+64)
	require.True(t, strings.HasPrefix(got, "start word"), got[:20])
	require.True(t, strings.HasSuffix(got, "word end"))
	require.Contains(t, got, " bytes cut) … ")
}

func TestMessageCutsBetweenCharacters(t *testing.T) {
	in := strings.Repeat("é", MaxRun)
	got := Message(in)
	require.True(t, utf8.ValidString(got), got)
	require.Contains(t, got, "…(2048 bytes)")
}
