package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// listJSON is a Printable whose JSON document is mostly one list (status's
// spores): -o json writes that list element by element, so a fleet of
// 10,000 is never held as one encoded document, twice (compact, then
// indented). The bytes are json.MarshalIndent's of the whole value.
type listJSON interface {
	// jsonList returns the document with the list left out (nil), the
	// list's key in it, the list's length and its i-th element.
	jsonList() (doc any, key string, n int, elem func(i int) any)
}

// writeListJSON writes v as printTo's JSON does: json.MarshalIndent with
// two-space indents, escapeJSON, a newline. The document without its list
// is encoded whole and the list's elements are put where its null stands
// (`\n  "KEY": null`: at the top level's indent, which nothing inside a
// string can spell, a newline being escaped there). An empty list goes
// through the whole value, which knows whether it prints [] or null.
func writeListJSON(w io.Writer, v listJSON) error {
	doc, key, n, elem := v.jsonList()
	if n == 0 {
		return writeWholeJSON(w, v)
	}
	d, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	k, err := json.Marshal(key)
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	mark := append(append([]byte("\n  "), k...), ": null"...)
	at := bytes.Index(d, mark)
	if at < 0 || bytes.Index(d[at+1:], mark) >= 0 {
		return fmt.Errorf("encode json: key %s is not the document's once", k)
	}
	head, tail := d[:at+len(mark)-len("null")], d[at+len(mark):]
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(escapeJSON(head))
	bw.WriteString("[\n    ")
	var e, ind bytes.Buffer
	enc := json.NewEncoder(&e)
	for i := range n {
		e.Reset()
		ind.Reset()
		if err := enc.Encode(elem(i)); err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		// Encode ends with a newline; MarshalIndent has none there.
		if err := json.Indent(&ind, bytes.TrimSuffix(e.Bytes(), []byte("\n")), "    ", "  "); err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		if i > 0 {
			bw.WriteString(",\n    ")
		}
		bw.Write(escapeJSON(ind.Bytes()))
	}
	bw.WriteString("\n  ]")
	bw.Write(escapeJSON(tail))
	bw.WriteByte('\n')
	return bw.Flush()
}

// writeWholeJSON is printTo's JSON of any value: one document, indented,
// escaped.
func writeWholeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	b = append(escapeJSON(b), '\n')
	_, err = w.Write(b)
	return err
}
