package bridge_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
)

func TestFatalError(t *testing.T) {
	long := strings.Repeat("é", 400)
	cases := []struct {
		name, tail, want string
	}{
		{"none", "time=… level=WARN msg=\"x\"\n", ""},
		{"empty", "", ""},
		{"usage hint after it", "level=INFO msg=start\nerror: no claude executable: pass --claude-bin\nRun 'sporectl --help' for usage.\n", "no claude executable: pass --claude-bin"},
		{"the last of two", "error: old\nerror: new\n", "new"},
		{"crlf", "error: port taken\r\n", "port taken"},
		{"not at line start", "msg=\"error: inside\"\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, bridge.FatalError(c.tail))
		})
	}
	got := bridge.FatalError("error: " + long)
	require.True(t, utf8.ValidString(got), "cut at a rune boundary")
	require.LessOrEqual(t, len(got), 310)
	require.True(t, strings.HasSuffix(got, "…"))
}
