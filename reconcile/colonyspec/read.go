package colonyspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sporectl/sporectl/internal/lazy"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// Error is a fault of a file: where (file, line, the field's path) and
// what. Nothing was applied for it.
type Error struct {
	File  string
	Line  int    // 0: the file as a whole
	Field string // "spec.spores[2].resources.cpu"; "" for the file's syntax
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	return b.String() + ": " + e.Msg
}

// MaxErrors bounds the faults Read reports at once.
const MaxErrors = 20

// Aliases may repeat a value anywhere, so a small file can stand for a
// huge one ("billion laughs": 22 KB decoded for 90 s into 4.3 GB). Read
// decodes at most valuesPerByte values a byte of the file (and at least
// minValues): far more than aliases repeat as a person writes them, too
// few to cost more than reading a file that size written out.
const (
	valuesPerByte = 4
	minValues     = 10_000
)

// source is where a document was read.
type source struct {
	file  string
	lines map[string]int // field path → line
}

// at is where path was given: "file:line", the nearest enclosing field's
// line when path itself was left out.
func (s *source) at(path string) (string, int) {
	if s == nil {
		return "", 0
	}
	for p := path; ; {
		if l, ok := s.lines[p]; ok {
			return s.file, l
		}
		if p == "" {
			return s.file, 0
		}
		i := max(strings.LastIndexAny(p, ".["), 0)
		p = p[:i]
	}
}

// errorAt is a fault at path of d.
func (d *Document) errorAt(path, format string, a ...any) *Error {
	file, line := d.src.at(path)
	return &Error{File: file, Line: line, Field: path, Msg: fmt.Sprintf(format, a...)}
}

// where is d's "file:line: path" for errors from the store's side.
func (d *Document) where(path string) string {
	file, line := d.src.at(path)
	if line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, line, path)
	}
	return file + ": " + path
}

// Read decodes every Colony document of data, read from file (the name
// errors give), strictly: a field the format does not have, one given
// twice, a value of the wrong shape or outside its grammar is an *Error
// naming the file, line and field, up to MaxErrors of them joined.
// Empty documents are skipped.
func Read(file string, data []byte) ([]Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	var errs []error
	bound := max(minValues, valuesPerByte*len(data))
	left := bound // shared by the file's documents
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The stream cannot be read past a syntax error.
			errs = append(errs, syntaxError(file, err))
			break
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue
		}
		r := &reader{src: &source{file: file, lines: map[string]int{}}, left: &left, bound: bound}
		var d Document
		r.decode(n.Content[0], "", reflect.ValueOf(&d).Elem())
		d.src = r.src
		if r.expanded != nil {
			// The rest was not decoded: its faults would be noise.
			errs = []error{r.expanded}
			break
		}
		if len(r.errs) == 0 {
			r.errs = d.validate()
		}
		errs = append(errs, r.errs...)
		docs = append(docs, d)
	}
	if len(errs) > MaxErrors {
		errs = append(errs[:MaxErrors], fmt.Errorf("%s: and %d more", file, len(errs)-MaxErrors))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return docs, nil
}

var yamlLine = lazy.New("colonyspec.yamlLine", func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// syntaxError is the YAML parser's error as an *Error of file.
func syntaxError(file string, err error) *Error {
	msg := err.Error()
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "not valid YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// reader decodes one document's nodes into its Go types by their yaml
// tags, recording each field's line.
type reader struct {
	src  *source
	errs []error
	// left counts down the values the file may still decode (aliases
	// followed included); at zero, expanded says where and decode stops.
	left     *int
	bound    int
	expanded *Error
	alias    int // the line of the alias being followed, 0 outside one
}

func (r *reader) fail(n *yaml.Node, path, format string, a ...any) {
	r.errs = append(r.errs, &Error{File: r.src.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, a...)})
}

func (r *reader) decode(n *yaml.Node, path string, v reflect.Value) {
	if r.expanded != nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		defer func(line int) { r.alias = line }(r.alias)
		r.alias = n.Line
	}
	if *r.left--; *r.left < 0 {
		line := n.Line
		if r.alias > 0 {
			line = r.alias // where the value was repeated, not where it was first written
		}
		r.expanded = &Error{File: r.src.file, Line: line, Field: path,
			Msg: fmt.Sprintf("its aliases expand the document past %d values (%d a byte of the file); write the values out, or put what spores share in spec.defaults", r.bound, valuesPerByte)}
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, ok := r.src.lines[path]; !ok {
		r.src.lines[path] = n.Line
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		r.decode(n, path, v.Elem())
	case reflect.String:
		switch {
		case null:
			v.SetString("")
		case n.Kind != yaml.ScalarNode:
			r.fail(n, path, "want a single value, not %s", kindName(n))
		default:
			v.SetString(n.Value)
		}
	case reflect.Bool:
		switch {
		case n.Kind == yaml.ScalarNode && n.Tag == "!!bool" && (n.Value == "true" || n.Value == "false"):
			v.SetBool(n.Value == "true")
		default:
			r.fail(n, path, "want true or false, not %s", kindName(n))
		}
	case reflect.Slice:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			r.fail(n, path, "want a list, not %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			r.decode(c, fmt.Sprintf("%s[%d]", path, i), s.Index(i))
		}
		v.Set(s)
	case reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			r.fail(n, path, "want a whole number, not %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Map:
		// Keys and values of strings (labels, annotations): each entry's
		// path is path["key"], as state names it.
		if null {
			return
		}
		if n.Kind != yaml.MappingNode {
			r.fail(n, path, "want a mapping of keys to values, not %s", kindName(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			child := path + "[" + quote.Value(k.Value) + "]"
			if k.Kind != yaml.ScalarNode {
				r.fail(k, child, "want a key, not %s", kindName(k))
				continue
			}
			if first, dup := seen[k.Value]; dup {
				r.fail(k, child, "given twice (first at line %d)", first)
				continue
			}
			seen[k.Value] = k.Line
			r.src.lines[child] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			r.decode(val, child, e)
			m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Struct:
		if null {
			return
		}
		if n.Kind != yaml.MappingNode {
			r.fail(n, path, "want a mapping of fields, not %s", kindName(n))
			return
		}
		fields, names := fieldsOf(v.Type())
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			child := keyName(k.Value)
			if path != "" {
				child = path + "." + child
			}
			if first, dup := seen[k.Value]; dup {
				r.fail(k, child, "given twice (first at line %d)", first)
				continue
			}
			seen[k.Value] = k.Line
			idx, ok := fields[k.Value]
			if !ok {
				r.fail(k, child, "unknown field %s (the fields here: %s)", quote.Value(k.Value), strings.Join(names, ", "))
				continue
			}
			r.src.lines[child] = k.Line
			r.decode(val, child, fieldByIndex(v, idx))
		}
	default:
		panic("colonyspec: no decoding of " + v.Type().String())
	}
}

// plainKey is a key a path shows as it is.
var plainKey = lazy.New("colonyspec.plainKey", func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// keyName is key as a field path shows it: quoted (control characters
// escaped, so an error never carries them to a terminal) unless plain.
func keyName(key string) string {
	if plainKey().MatchString(key) {
		return key
	}
	return quote.Value(key)
}

// fieldByIndex is v's field at idx (through inline structs).
func fieldByIndex(v reflect.Value, idx []int) reflect.Value {
	for _, i := range idx {
		v = v.Field(i)
	}
	return v
}

// fieldsOf maps each yaml name of t (inline structs flattened) to its
// field's index; names in declaration order, for errors.
func fieldsOf(t reflect.Type) (map[string][]int, []string) {
	fields := map[string][]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case opts == "inline":
			sub, subNames := fieldsOf(f.Type)
			for _, n := range subNames {
				fields[n] = append([]int{i}, sub[n]...)
			}
			names = append(names, subNames...)
		default:
			fields[name] = []int{i}
			names = append(names, name)
		}
	}
	return fields, names
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "the value " + quote.Value(n.Value)
}

// validate checks the values of a decoded document: what each field's
// grammar allows. What depends on the store (ranks, colonies) is Plan's.
func (d *Document) validate() []error {
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, d.errorAt(path, format, a...)) }
	if d.APIVersion != APIVersion {
		bad("apiVersion", "want %q, not %s", APIVersion, quote.Value(d.APIVersion))
	}
	if d.Kind != Kind {
		bad("kind", "want %q, not %s", Kind, quote.Value(d.Kind))
	}
	if d.Metadata.Name == "" {
		bad("metadata.name", "the colony's name is required")
	} else if err := state.ValidateName("colony", d.Metadata.Name); err != nil {
		bad("metadata.name", "%s", reason(err))
	}
	if v := d.Spec.SleepAfter; v != nil {
		if _, err := parseSleepAfter(*v); err != nil {
			bad("spec.sleepAfter", "%s", err.Error())
		}
	}
	if df := d.Spec.Defaults; df != nil {
		errs = append(errs, d.validateFields("spec.defaults", *df)...)
	}
	errs = append(errs, d.validateBudget("spec.budget", d.Spec.Budget)...)
	errs = append(errs, d.validatePod("spec.pod", d.Spec.Pod)...)
	if v := d.Spec.Egress; v != nil {
		// "" is the store's default, not a value a document writes.
		if *v == "" || state.ValidateEgress("spec.egress", *v) != nil {
			bad("spec.egress", "invalid value %s: want %q or %q", quote.Value(*v), state.EgressAll, state.EgressNone)
		}
	}
	errs = append(errs, d.validateSchedules()...)
	ids := map[string]string{}
	for i, s := range d.Spec.Spores {
		p := fmt.Sprintf("spec.spores[%d]", i)
		switch err := state.ValidateID(s.ID); {
		case s.ID == "":
			bad(p+".id", "a spore's id is required")
		case err != nil:
			bad(p+".id", "%s", reason(err))
		case ids[s.ID] != "":
			bad(p+".id", "spore %s is listed twice (first at %s)", s.ID, ids[s.ID])
		default:
			ids[s.ID] = d.where(p)
		}
		if s.Rank != nil {
			if _, err := state.ParseRank(*s.Rank); err != nil {
				bad(p+".rank", "invalid value %s: want one of spore, swarm, colony, arch", quote.Value(*s.Rank))
			}
		}
		for name, v := range map[string]*string{"swarm": s.Swarm, "role": s.Role} {
			if v != nil && *v != "" {
				if err := state.ValidateName(name, *v); err != nil {
					bad(p+"."+name, "%s", reason(err))
				}
			}
		}
		if s.Loop != nil {
			if _, err := parseLoop(*s.Loop); err != nil {
				bad(p+".loop", "%s", err.Error())
			}
		}
		if s.SleepAfter != nil {
			if _, err := parseSleepAfter(*s.SleepAfter); err != nil {
				bad(p+".sleepAfter", "%s", err.Error())
			}
		}
		errs = append(errs, d.validatePod(p+".pod", s.Pod)...)
		errs = append(errs, d.validateFields(p, s.Fields)...)
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		var x, y *Error
		errors.As(a, &x)
		errors.As(b, &y)
		return x.Line - y.Line
	})
	return errs
}

func (d *Document) validateFields(p string, f Fields) []error {
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, d.errorAt(path, format, a...)) }
	if f.Desired != nil {
		switch state.Desired(*f.Desired) {
		case state.Running, state.Paused, state.Stopped:
		default:
			bad(p+".desired", "invalid value %s: want one of Running, Paused, Stopped", quote.Value(*f.Desired))
		}
	}
	if f.Image != nil {
		if *f.Image == "" {
			bad(p+".image", "is empty: give an image such as ghcr.io/org/spore:1.2, or leave the field out")
		} else if err := state.CheckImage(*f.Image); err != nil {
			bad(p+".image", "invalid value %s: %v", quote.Value(*f.Image), err)
		}
	}
	errs = append(errs, d.validateBudget(p+".budget", f.Budget)...)
	if r := f.Resources; r != nil {
		for _, q := range []struct {
			name string
			v    *string
		}{{"cpu", r.CPU}, {"memory", r.Memory}, {"storage", r.Storage}} {
			switch {
			case q.v == nil:
			case *q.v == "":
				bad(p+".resources."+q.name, "is empty: give a quantity such as 2, 500m, 3Gi, or leave the field out")
			default:
				if err := state.CheckQuantity(q.name, *q.v); err != nil {
					bad(p+".resources."+q.name, "invalid value %s: %v", quote.Value(*q.v), err)
				}
			}
		}
	}
	return errs
}

// validateBudget checks a budget at path ("spec.budget",
// "spec.spores[2].budget").
func (d *Document) validateBudget(path string, b *Budget) []error {
	if b == nil {
		return nil
	}
	var errs []error
	if b.TokensPerDay != nil {
		if _, err := parseTokens(*b.TokensPerDay); err != nil {
			errs = append(errs, d.errorAt(path+".tokensPerDay", "%s", err.Error()))
		}
	}
	if b.CostPerDay != nil {
		if _, err := state.ParseCost("costPerDay", *b.CostPerDay); err != nil {
			errs = append(errs, d.errorAt(path+".costPerDay", "invalid value %s: want 0 (no limit) or a cost in US dollars such as 2.50", quote.Value(*b.CostPerDay)))
		}
	}
	return errs
}

// reason is a grammar error's text without the field name state gives it
// (the error names the field by its path).
func reason(err error) string {
	var inv *state.InvalidError
	if errors.As(err, &inv) {
		return fmt.Sprintf("invalid value %s: %s", quote.Value(inv.Value), inv.Reason)
	}
	return err.Error()
}
