package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// Output formats accepted by -o.
var outputFormats = []string{"table", "wide", "json", "yaml", "name"}

func validateOutput(o string) error {
	for _, f := range outputFormats {
		if o == f {
			return nil
		}
	}
	return usageErrorf("unknown output format %s for -o: use one of %s", quote.Value(o), strings.Join(outputFormats, ", "))
}

// Printable is what a command hands the printer: a value that marshals to
// the documented JSON shape, and its table and name forms.
type Printable interface {
	// Table returns the header and rows; wide adds columns.
	Table(wide bool) (header []string, rows [][]string)
	// Names returns one "kind/name" per object, for -o name.
	Names() []string
}

// Texter is a Printable whose table form is lines of text (a
// transcript, a log), not columns: printed one per line, each sanitized
// as a table cell is, outside any column alignment.
type Texter interface {
	Lines() []string
}

// Footer is a Printable with lines printed under its table (where the
// figures come from), sanitized; left out with --no-headers.
type Footer interface {
	Footer() []string
}

// Print writes v to w in the format chosen by -o. Every command prints
// through here (or PrintLine, for a stream of JSON lines), so the formats
// behave the same everywhere; the two text streams with no end, chat -f's
// transcript and logs, write through their own sanitizing writers
// (transcript.WriteText, lineSanitizer).
func (f *Factory) Print(v Printable) error {
	return printTo(f.IO.Out, f.Global.Output, f.Global.NoHeaders, v)
}

// PrintLine writes v as one compact JSON document on one line (JSON
// lines), for a stream that has no end to close one document with
// (chat -f -o json), under printTo's escaping.
func (f *Factory) PrintLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	_, err = f.IO.Out.Write(append(escapeJSON(b), '\n'))
	return err
}

// printTo is the one output-safety rule of every printer: table cells
// are sanitized (control characters, ANSI escapes and bidi controls shown
// as visible escapes, one line each); JSON escapes every such character
// as \uXXXX, so it stays valid and exact and reaches a terminal inert;
// YAML double-quotes and escapes them (\x7F, \e), and is valid for any
// stored text.
func printTo(w io.Writer, format string, noHeaders bool, v Printable) error {
	switch format {
	case "json":
		if l, ok := v.(listJSON); ok {
			return writeListJSON(w, l)
		}
		return writeWholeJSON(w, v)
	case "yaml":
		b, err := toYAML(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "name":
		var b strings.Builder
		for _, n := range v.Names() {
			b.WriteString(transcript.Sanitize(n))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(w, b.String())
		return err
	default:
		if t, ok := v.(Texter); ok {
			return writeLines(w, t.Lines())
		}
		header, rows := v.Table(format == "wide")
		// tabwriter writes cell by cell: buffered, a table of 10,000
		// spores is a few writes, not 170,000.
		bw := bufio.NewWriterSize(w, 64<<10)
		tw := tabwriter.NewWriter(bw, 0, 8, 3, ' ', 0)
		if !noHeaders && header != nil {
			fmt.Fprintln(tw, strings.Join(header, "\t"))
		}
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = transcript.Sanitize(c)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if f, ok := v.(Footer); ok && !noHeaders {
			return writeLines(w, f.Footer())
		}
		return nil
	}
}

// writeLines writes each line sanitized (control characters, escapes and
// bidi controls shown visibly), one per line.
func writeLines(w io.Writer, lines []string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(transcript.Sanitize(l))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escapeJSON rewrites every unsafe rune of encoded JSON (or of YAML whose
// strings holding one are double-quoted) as \uXXXX. They can only stand
// inside strings (the structure is ASCII), where the escape means the
// same character.
func escapeJSON(b []byte) []byte {
	// The ASCII prefix is skipped byte by byte, not rune by rune: of
	// ASCII only DEL is unsafe, and a fleet's status is mostly ASCII
	// (3.7 MB at 10,000 spores, where the rune test was a tenth of it).
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf && b[i] != 0x7f {
		i++
	}
	if !bytes.ContainsFunc(b[i:], transcript.Unsafe) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if transcript.Unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// toYAML prints v's JSON shape as YAML, keys sorted, two-space indents.
// go.yaml.in/yaml/v3 escapes DEL and C1 controls in double quotes where
// the older emitter refused them.
func toYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent() // "- a" under its key, as kubectl prints
	if err := enc.Encode(numbers(tree)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	// What the emitter leaves raw (bidi controls, which YAML counts as
	// printable) stands only in the double-quoted scalars numbers() made,
	// where \uXXXX is an escape of the same character.
	return escapeJSON(buf.Bytes()), nil
}

// numbers turns json.Numbers into int64 or float64, so YAML prints them as
// numbers, not strings, and puts a string holding an unsafe character in
// double quotes, where it can be escaped.
func numbers(v any) any {
	switch x := v.(type) {
	case string:
		if strings.ContainsFunc(x, transcript.Unsafe) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x, Style: yaml.DoubleQuotedStyle}
		}
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}

// orDash shows an empty cell as "-" so columns stay aligned for awk.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
