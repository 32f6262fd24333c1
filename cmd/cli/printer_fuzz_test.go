package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// rawUnsafe reports a character that must never reach a terminal as is.
func rawUnsafe(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || transcript.Unsafe(r)) {
			return r, true
		}
	}
	return 0, false
}

// FuzzPrinters: for any stored text, every -o format prints something
// valid that carries no raw control character, and JSON and YAML give
// the text back exactly.
func FuzzPrinters(f *testing.F) {
	for _, s := range []string{"plain", "esc \x1b[2J", "del \x7f", "c1 \u009b31m", "bidi \u202e", "nul \x00", "tab\tcr\r", "ls \u2028", "bad \xff", "quote \" \\ "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			// Stores keep valid UTF-8 only (both refuse anything else).
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		v := eventList{Spore: "a", LastSeq: 1, Events: []state.Event{{Seq: 1, Kind: state.KindPrompt, From: s, Text: s, Action: s}}}
		for _, format := range outputFormats {
			var buf bytes.Buffer
			if err := printTo(&buf, format, false, v); err != nil {
				t.Fatalf("-o %s: %v", format, err)
			}
			out := buf.String()
			if r, bad := rawUnsafe(out); bad {
				t.Fatalf("-o %s printed a raw %U for %q", format, r, s)
			}
			switch format {
			case "json":
				var back eventList
				if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
					t.Fatalf("-o json is not JSON for %q: %v", s, err)
				}
				if back.Events[0].Text != s {
					t.Fatalf("-o json changed %q into %q", s, back.Events[0].Text)
				}
			case "yaml":
				var back struct {
					Events []struct{ Text string } `yaml:"events"`
				}
				if err := yaml.Unmarshal(buf.Bytes(), &back); err != nil {
					t.Fatalf("-o yaml is not YAML for %q: %v", s, err)
				}
				if back.Events[0].Text != s {
					t.Fatalf("-o yaml changed %q into %q", s, back.Events[0].Text)
				}
			}
		}
	})
}
