// Package selector parses kubectl's label-selector grammar and matches a
// parsed selector against an object's keys. It is pure: it never reads a
// store or decides which keys an object has (its caller hands it a lookup),
// and it never echoes more of a bad selector than internal/quote bounds.
//
// Supported, as kubectl's docs list them: requirements joined by commas
// (AND); `key=value`, `key==value` and `key!=value`; `key in (a,b)` and
// `key notin (a,b)`; `key` (the key is set) and `!key` (it is not).
// `key!=value` and `key notin (…)` match an object without the key, as in
// Kubernetes. Keys follow Kubernetes' label-key grammar, values its
// label-value grammar (kube/podgrammar). There is no OR.
package selector

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/kube/podgrammar"
)

// MaxLen bounds a selector, in bytes: longer is a mistake, not a query.
const MaxLen = 4096

// Op is a requirement's operator.
type Op string

const (
	Equals    Op = "="
	NotEquals Op = "!="
	In        Op = "in"
	NotIn     Op = "notin"
	Exists    Op = "exists"
	NotExists Op = "!"
)

// Requirement is one comma-separated part of a selector.
type Requirement struct {
	Key    string
	Op     Op
	Values []string // one for = and !=; one or more for in and notin; none otherwise
}

// Selector is a parsed selector: every requirement must hold.
type Selector []Requirement

// Lookup returns an object's value of key, and whether it has the key.
type Lookup func(key string) (value string, ok bool)

// Matches reports whether every requirement holds of the object.
func (s Selector) Matches(get Lookup) bool {
	for _, r := range s {
		if !r.matches(get) {
			return false
		}
	}
	return true
}

func (r Requirement) matches(get Lookup) bool {
	v, ok := get(r.Key)
	switch r.Op {
	case Equals:
		return ok && v == r.Values[0]
	case NotEquals:
		return !ok || v != r.Values[0]
	case In:
		return ok && contains(r.Values, v)
	case NotIn:
		return !ok || !contains(r.Values, v)
	case Exists:
		return ok
	case NotExists:
		return !ok
	}
	return false
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// String is the selector in its canonical form ("a=b,c!=d,e in (f,g)").
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		switch r.Op {
		case Equals, NotEquals:
			parts[i] = r.Key + string(r.Op) + r.Values[0]
		case In, NotIn:
			parts[i] = r.Key + " " + string(r.Op) + " (" + strings.Join(r.Values, ",") + ")"
		case Exists:
			parts[i] = r.Key
		case NotExists:
			parts[i] = "!" + r.Key
		}
	}
	return strings.Join(parts, ",")
}

// ErrSyntax is wrapped by every error of Parse.
var ErrSyntax = errors.New("invalid selector")

// Parse reads s. Its errors wrap ErrSyntax and quote at most a bounded
// prefix of s and of the part that is wrong.
func Parse(s string) (Selector, error) {
	if len(s) > MaxLen {
		return nil, fmt.Errorf("%w %s: %d bytes; at most %d", ErrSyntax, quote.Value(s), len(s), MaxLen)
	}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty (use --all for every spore)", ErrSyntax)
	}
	var sel Selector
	for _, part := range splitTop(s) {
		r, err := parseRequirement(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%w %s: %s", ErrSyntax, quote.Value(s), err)
		}
		sel = append(sel, r)
	}
	return sel, nil
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parseRequirement(p string) (Requirement, error) {
	if p == "" {
		return Requirement{}, errors.New("an empty requirement (two commas, or one at an end)")
	}
	if rest, ok := strings.CutPrefix(p, "!"); ok {
		k := strings.TrimSpace(rest)
		return Requirement{Key: k, Op: NotExists}, checkKey(k)
	}
	// The operators that are symbols: != before = and ==.
	for _, op := range []struct {
		text string
		op   Op
	}{{"!=", NotEquals}, {"==", Equals}, {"=", Equals}} {
		if k, v, ok := strings.Cut(p, op.text); ok {
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if err := checkKey(k); err != nil {
				return Requirement{}, err
			}
			if err := checkValue(k, v); err != nil {
				return Requirement{}, err
			}
			return Requirement{Key: k, Op: op.op, Values: []string{v}}, nil
		}
	}
	// key in (a,b) / key notin (a,b): the key, a space, the word.
	if k, rest, ok := strings.Cut(p, " "); ok {
		rest = strings.TrimSpace(rest)
		for _, op := range []Op{NotIn, In} {
			list, ok := strings.CutPrefix(rest, string(op))
			if !ok {
				continue
			}
			vs, err := parseSet(k, strings.TrimSpace(list))
			if err != nil {
				return Requirement{}, err
			}
			return Requirement{Key: k, Op: op, Values: vs}, checkKey(k)
		}
		return Requirement{}, fmt.Errorf("%s: want key=value, key!=value, key in (a,b), key notin (a,b), key or !key", quote.Value(p))
	}
	return Requirement{Key: p, Op: Exists}, checkKey(p)
}

// parseSet reads "(a,b,c)".
func parseSet(key, s string) ([]string, error) {
	inner, ok := strings.CutPrefix(s, "(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		return nil, fmt.Errorf("%s: the values of in and notin go in parentheses: %s in (a,b)", quote.Value(s), key)
	}
	var vs []string
	for _, v := range strings.Split(inner, ",") {
		v = strings.TrimSpace(v)
		if err := checkValue(key, v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func checkKey(k string) error {
	if k == "" {
		return errors.New("a requirement without a key")
	}
	if why := podgrammar.LabelKey(k); why != "" {
		return fmt.Errorf("key %s: %s", quote.Value(k), why)
	}
	return nil
}

func checkValue(k, v string) error {
	if why := podgrammar.LabelValue(v); why != "" {
		return fmt.Errorf("value %s of %s: %s", quote.Value(v), quote.Value(k), why)
	}
	return nil
}
