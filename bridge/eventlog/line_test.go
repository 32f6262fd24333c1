package eventlog

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	big := `{"type":"user","x":"` + strings.Repeat("y", MaxLine) + `"}`
	tests := []struct {
		name string
		raw  string
		want any // a JSON value the normalized line must decode to
	}{
		{"json object kept", `{"type":"assistant","n":1}`, map[string]any{"type": "assistant", "n": 1.0}},
		{"spaces trimmed", "  {\"a\":1}\r", map[string]any{"a": 1.0}},
		{"plain text becomes a string", `hello world`, "hello world"},
		{"truncated json becomes a string", `{"type":"assi`, `{"type":"assi`},
		{"invalid utf-8 escaped", "ab\xffcd", `ab\xffcd`},
		{"invalid utf-8 inside json escaped", "{\"a\":\"\xfe\"}", "{\"a\":\"\\xfe\"}"},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize([]byte(tt.raw))
			require.True(t, json.Valid(got))
			var v any
			require.NoError(t, json.Unmarshal(got, &v))
			require.Equal(t, tt.want, v)
		})
	}
	t.Run("oversized line truncated with marker", func(t *testing.T) {
		got := Normalize([]byte(big))
		require.Less(t, len(got), 16<<10)
		var m struct {
			Type, Subtype string
			OriginalBytes int `json:"original_bytes"`
			Head          string
		}
		require.NoError(t, json.Unmarshal(got, &m))
		require.Equal(t, "bridge", m.Type)
		require.Equal(t, "line_truncated", m.Subtype)
		require.Equal(t, len(big), m.OriginalBytes)
		require.True(t, strings.HasPrefix(big, m.Head))
	})
	t.Run("a line whose string form passes the bound is truncated", func(t *testing.T) {
		// Under MaxLine as it came, but every control byte is six in its
		// JSON string form: served whole, it would break the contract.
		raw := strings.Repeat("\x01", MaxLine/2)
		got := Normalize([]byte(raw))
		require.LessOrEqual(t, len(got), MaxLine)
		var m struct{ Subtype string }
		require.NoError(t, json.Unmarshal(got, &m))
		require.Equal(t, "line_truncated", m.Subtype)
	})
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{`{"type":"system"}`, "plain", "\xff\xfe", `{"a":"\u2028"}`, "{\"a\":\n1}", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := Normalize(raw)
		if !json.Valid(got) || !utf8.Valid(got) || strings.ContainsAny(string(got), "\n") {
			t.Fatalf("Normalize(%q) = %q: not one line of UTF-8 JSON", raw, got)
		}
		if utf8.Valid(raw) && json.Valid(raw) && len(raw) <= MaxLine && !strings.Contains(string(raw), "\n") {
			if strings.TrimSpace(string(raw)) != string(got) {
				t.Fatalf("valid JSON %q changed to %q", raw, got)
			}
		}
	})
}
