package selector

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Selector
	}{
		{"colony=lab", Selector{{Key: "colony", Op: Equals, Values: []string{"lab"}}}},
		{"colony==lab", Selector{{Key: "colony", Op: Equals, Values: []string{"lab"}}}},
		{"colony!=lab", Selector{{Key: "colony", Op: NotEquals, Values: []string{"lab"}}}},
		{" colony = lab , rank=spore ", Selector{
			{Key: "colony", Op: Equals, Values: []string{"lab"}},
			{Key: "rank", Op: Equals, Values: []string{"spore"}}}},
		{"tier=", Selector{{Key: "tier", Op: Equals, Values: []string{""}}}},
		{"desired in (Paused, Stopped)", Selector{{Key: "desired", Op: In, Values: []string{"Paused", "Stopped"}}}},
		{"swarm notin (a),colony=x", Selector{
			{Key: "swarm", Op: NotIn, Values: []string{"a"}},
			{Key: "colony", Op: Equals, Values: []string{"x"}}}},
		{"swarm", Selector{{Key: "swarm", Op: Exists}}},
		{"!swarm", Selector{{Key: "swarm", Op: NotExists}}},
		{"example.com/team=ml", Selector{{Key: "example.com/team", Op: Equals, Values: []string{"ml"}}}},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for in, says := range map[string]string{
		"":                             "empty",
		"   ":                          "empty",
		"colony=lab,":                  "empty requirement",
		",colony=lab":                  "empty requirement",
		"=lab":                         "without a key",
		"Bad Key=x":                    "name must be",
		"colony=la b":                  "value",
		"colony=-lab":                  "value",
		"colony in lab":                "parentheses",
		"colony in (a":                 "parentheses",
		"colony like (a)":              "want key=value",
		"colony in (a b)":              "value",
		"!":                            "without a key",
		"x=" + strings.Repeat("v", 64): "at most 63",
		strings.Repeat("k", 5000):      "at most 4096",
		"colony=lab\x1b[31m":           `\x1b`,
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) = nil error; want one saying %q", in, says)
			continue
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): %v does not wrap ErrSyntax", in, err)
		}
		if !strings.Contains(err.Error(), says) {
			t.Errorf("Parse(%q) = %q; want it to say %q", in, err, says)
		}
		if len(err.Error()) > 600 {
			t.Errorf("Parse(%q): error of %d bytes: a bad selector is quoted bounded", in[:10], len(err.Error()))
		}
	}
}

func TestMatches(t *testing.T) {
	obj := map[string]string{"colony": "lab", "rank": "spore", "tier": ""}
	get := func(k string) (string, bool) { v, ok := obj[k]; return v, ok }
	for sel, want := range map[string]bool{
		"colony=lab":                       true,
		"colony=other":                     false,
		"colony!=other":                    true,
		"colony!=lab":                      false,
		"swarm!=a":                         true, // no key: != holds, as in Kubernetes
		"swarm notin (a)":                  true,
		"swarm in (a)":                     false,
		"colony in (x,lab)":                true,
		"colony notin (x,lab)":             false,
		"tier":                             true,
		"tier=":                            true,
		"swarm":                            false,
		"!swarm":                           true,
		"!colony":                          false,
		"colony=lab,rank=spore":            true,
		"colony=lab,rank=arch":             false,
		"colony=lab,rank in (arch,colony)": false,
	} {
		s, err := Parse(sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", sel, err)
		}
		if got := s.Matches(get); got != want {
			t.Errorf("%q matches %v = %v, want %v", sel, obj, got, want)
		}
	}
}

// FuzzParse: whatever the text, Parse returns a selector or an error
// wrapping ErrSyntax, bounded; a selector's canonical form parses back to
// the same selector.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"colony=lab", "a!=b,c in (d,e)", "!x", "x notin ()", "a==b", "k in (a,,b)", "((,))", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v does not wrap ErrSyntax", s, err)
			}
			if len(err.Error()) > 1000 {
				t.Fatalf("Parse: error of %d bytes", len(err.Error()))
			}
			return
		}
		again, err := Parse(sel.String())
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", s, sel.String(), err)
		}
		if d := cmp.Diff(sel, again); d != "" {
			t.Fatalf("Parse(%q) round trip (-first +again):\n%s", s, d)
		}
	})
}
