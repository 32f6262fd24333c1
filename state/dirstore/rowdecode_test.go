package dirstore

import (
	"encoding/json"
	"strings"
	"testing"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/stretchr/testify/require"
)

// sameAsEncodingJSON requires that p decodes into a rowJSON through
// jsonv1 (what decodeRow uses) exactly as through encoding/json: both
// refuse it, or both give the same value.
func sameAsEncodingJSON(t *testing.T, p []byte) {
	t.Helper()
	var want, got rowJSON
	wantErr := json.Unmarshal(p, &want)
	gotErr := jsonv1.Unmarshal(p, &got)
	if wantErr != nil {
		require.Error(t, gotErr, "encoding/json refuses %q (%v), jsonv1 does not", p, wantErr)
		return
	}
	require.NoError(t, gotErr, "encoding/json accepts %q, jsonv1 does not", p)
	require.Equal(t, want, got, "decoding %q", p)
}

// rowLines are rows as this format writes them: the fuzz models' rows,
// each with an outbox, a token, failures and a budget.
func rowLines(t testing.TB) [][]byte {
	var out [][]byte
	for _, id := range []string{"a", "spore", "x-1"} {
		m := fuzzModel(3, 7, 3, id, "text \u00e9 \u202e <&>", "local")
		for _, rid := range idsOf(m) {
			b, err := json.Marshal(m.rows[rid])
			require.NoError(t, err)
			out = append(out, b)
		}
	}
	return out
}

// TestDecodeRowAsEncodingJSON: decodeRow decodes rows with jsonv1, not
// encoding/json, for speed; on the rows the format writes and on what a
// hand or a bad disk makes of them, both read the same or both refuse.
func TestDecodeRowAsEncodingJSON(t *testing.T) {
	edits := []struct {
		name     string
		old, new string
	}{
		{"as written", "", ""},
		{"key in other case", `"wish":`, `"WISH":`},
		{"nested key in other case", `"colony":`, `"Colony":`},
		{"key spelled with an escape", `"wish":`, `"w\u0069sh":`},
		{"duplicate key", `"log":{`, `"log":{"file":"other.1.log",`},
		{"duplicate object", `,"log":`, `,"log":{"size":1},"log":`},
		{"unknown key", `"wish":{`, `"wish":{"nope":1,`},
		{"null wish", `"wish":{`, `"wish":null,"x":{`},
		{"string as number", `"size":`, `"size":"1",`},
		{"negative size", `"size":`, `"size":-`},
		{"float size", `"last_seq":`, `"last_seq":1.5,"y":`},
		{"huge seq", `"last_seq":`, `"last_seq":1e400,"y":`},
		{"bad time", `"created":"`, `"created":"yesterday","z":"`},
		{"invalid UTF-8", `"colony":"`, "\"colony\":\"\xff\xfe"},
		{"lone surrogate", `"colony":"`, `"colony":"\ud800`},
		{"control character", `"colony":"`, "\"colony\":\"\x01"},
		{"trailing garbage", "", ""},
		{"truncated", "", ""},
		{"array for object", `"status":{`, `"status":[],"q":{`},
		{"bool for string", `"rank":`, `"rank":true,"r":`},
		{"deep nesting", `"wish":{`, `"wish":{"u":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,`},
	}
	for i, line := range rowLines(t) {
		for _, e := range edits {
			p := string(line)
			switch e.name {
			case "trailing garbage":
				p += " x"
			case "truncated":
				p = p[:len(p)/2]
			default:
				if e.old != "" {
					p = strings.Replace(p, e.old, e.new, 1)
				}
			}
			t.Run(e.name, func(t *testing.T) {
				sameAsEncodingJSON(t, []byte(p))
				if i == 0 && e.name == "as written" {
					_, bad := decodeRow([]byte(p), formatVersion, 7)
					require.Empty(t, bad)
				}
			})
		}
	}
}

func FuzzDecodeRowAsEncodingJSON(f *testing.F) {
	for _, line := range rowLines(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		sameAsEncodingJSON(t, p)
	})
}
