package ui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/stretchr/testify/require"
)

// The stamps file reads as the JSON decoder reads it, whether it is the
// file Export writes (read line by line) or anything else: escapes,
// another layout, a name twice, a value not a string, damage.
func TestExportStampsReadAsTheJSONDecoderReadsThem(t *testing.T) {
	written := func(m map[string]string) string {
		b, err := json.MarshalIndent(m, "", " ")
		require.NoError(t, err)
		return string(append(b, '\n'))
	}
	for _, tc := range []struct {
		name, text string
		plain      bool // read without the JSON decoder
	}{
		{"as Export writes it", written(map[string]string{
			revisionStamp: "17", recordStamp + "a": "0f1e", ExportIndex: "aa", "spores/a.html": "bb", "spores/b-2.html": "cc",
		}), true},
		{"none", written(map[string]string{}), true},
		{"an escape", written(map[string]string{"spores/<a>.html": "x", "q\"uote": "\\"}), false},
		{"unicode", written(map[string]string{"spores/é.html": "ü"}), true},
		{"on one line", `{"index.html":"aa","spores/a.html":"bb"}`, false},
		{"a name twice", "{\n \"a\": \"1\",\n \"a\": \"2\"\n}\n", false},
		{"a value not a string", "{\n \"a\": 1\n}\n", false},
		{"a value null", "{\n \"a\": null\n}\n", false},
		{"torn", written(map[string]string{"a": "1", "b": "2"})[:12], false},
		{"not UTF-8", "{\n \"spores/\xff.html\": \"1\"\n}\n", false},
		{"a tab in a name", "{\n \"a\tb\": \"1\"\n}\n", false},
		{"more after it", written(map[string]string{"a": "1"}) + "{}\n", false},
		{"empty", "", false},
		{"null", "null\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want map[string]string
			wantErr := jsonv1.Unmarshal([]byte(tc.text), &want)
			got, err := decodeExportStamps([]byte(tc.text))
			if wantErr != nil {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
			_, plain := plainExportStamps(tc.text)
			require.Equal(t, tc.plain, plain, "read line by line")
		})
	}
}

// Only the entries of files still there are kept (and those naming no
// file); a stamps file that does not read is no stamps.
func TestReadExportStampsKeepsThePagesThere(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ExportSpores), 0o700))
	for _, name := range []string{ExportIndex, ExportSpores + "/a.html"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte("x"), 0o600))
	}
	b, err := json.MarshalIndent(map[string]string{
		revisionStamp: "3", recordStamp + "gone": "r", ExportIndex: "i",
		ExportSpores + "/a.html": "a", ExportSpores + "/gone.html": "g", "static/x.css": "s",
	}, "", " ")
	require.NoError(t, err)
	p := filepath.Join(dir, filepath.FromSlash(ExportStamps))
	require.NoError(t, os.WriteFile(p, b, 0o600))
	require.Equal(t, map[string]string{
		revisionStamp: "3", recordStamp + "gone": "r", ExportIndex: "i", ExportSpores + "/a.html": "a",
	}, ReadExportStamps(dir))

	require.NoError(t, os.Remove(filepath.Join(dir, ExportIndex)))
	require.NotContains(t, ReadExportStamps(dir), ExportIndex)

	require.NoError(t, os.WriteFile(p, b[:len(b)/2], 0o600))
	require.Nil(t, ReadExportStamps(dir), "torn")
}
