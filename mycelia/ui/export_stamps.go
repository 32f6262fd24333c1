package ui

import (
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ReadExportStamps reads what the export in dir last wrote to
// ExportStamps, keeping only entries whose file is still there (and
// those that name no file: the revision and the records'). Anything
// unreadable counts as no stamps (every page is rendered again).
func ReadExportStamps(dir string) map[string]string {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ExportStamps)))
	if err != nil {
		return nil
	}
	stamps, err := decodeExportStamps(b)
	if err != nil {
		return nil
	}
	_, index := os.Stat(filepath.Join(dir, ExportIndex))
	// Names only: the entries' types would cost a stat each here.
	var names []string
	if d, err := os.Open(filepath.Join(dir, ExportSpores)); err == nil {
		names, _ = d.Readdirnames(-1)
		d.Close()
	}
	pages := make(map[string]struct{}, len(names))
	for _, name := range names {
		pages[name] = struct{}{}
	}
	for rel := range stamps {
		if strings.HasPrefix(rel, ".") {
			continue
		}
		if name, ok := strings.CutPrefix(rel, ExportSpores+"/"); ok {
			if _, there := pages[name]; there {
				continue
			}
		} else if rel == ExportIndex && index == nil {
			continue
		}
		delete(stamps, rel)
	}
	return stamps
}

// decodeExportStamps decodes the stamps file, one JSON object of
// strings. The file Export writes (json.MarshalIndent of ids, paths and
// hex digests: one entry a line, no escapes) is read line by line, each
// name and value a slice of one copy of the text; anything else is left
// to the JSON decoder. The reflecting decoder took 20 ms of 20,000
// entries, a fifth of the projection of a fleet at rest.
func decodeExportStamps(b []byte) (map[string]string, error) {
	if stamps, ok := plainExportStamps(string(b)); ok {
		return stamps, nil
	}
	var stamps map[string]string
	if err := jsonv1.Unmarshal(b, &stamps); err != nil {
		return nil, err
	}
	return stamps, nil
}

// plainExportStamps reads text as MarshalIndent(stamps, "", " ") writes
// it, ok false for anything else (an escape, another layout, a name
// twice, bytes not UTF-8), which the JSON decoder then reads.
func plainExportStamps(text string) (map[string]string, bool) {
	body, ok := strings.CutPrefix(text, "{\n")
	if !ok {
		return map[string]string{}, text == "{}\n"
	}
	body, ok = strings.CutSuffix(body, "\n}\n")
	if !ok || strings.ContainsRune(body, '\\') || !utf8.ValidString(body) {
		return nil, false
	}
	stamps := make(map[string]string, strings.Count(body, "\n")+1)
	for line := range strings.SplitSeq(body, "\n") {
		line, ok := strings.CutPrefix(line, ` "`)
		if !ok {
			return nil, false
		}
		line = strings.TrimSuffix(line, ",")
		name, value, ok := strings.Cut(line, `": "`)
		if !ok || !plainJSON(name) {
			return nil, false
		}
		if value, ok = strings.CutSuffix(value, `"`); !ok || !plainJSON(value) {
			return nil, false
		}
		if _, dup := stamps[name]; dup {
			return nil, false
		}
		stamps[name] = value
	}
	return stamps, true
}

// plainJSON says whether s is a JSON string's content as written, without
// a quote or control character (escapes are refused before).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == '"' {
			return false
		}
	}
	return true
}
