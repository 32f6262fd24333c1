package quote

import (
	"strings"
	"testing"

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
