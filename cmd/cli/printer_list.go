package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
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
// (splitListJSON). An empty list goes
// through the whole value, which knows whether it prints [] or null.
func writeListJSON(w io.Writer, v listJSON) error {
	doc, key, n, elem := v.jsonList()
	if n == 0 {
		return writeWholeJSON(w, v)
	}
	head, tail, err := splitListJSON(doc, key)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head)
	// Blocks of elements are encoded on every core at once, and written
	// in order: encoding is most of the printing, and a round holds a few
	// blocks' bytes, not the list's.
	workers := runtime.GOMAXPROCS(0)
	bufs := make([]bytes.Buffer, workers)
	errs := make([]error, workers)
	for lo := 0; lo < n; lo += workers * listBlock {
		var wg sync.WaitGroup
		for k := range workers {
			a := lo + k*listBlock
			if a >= n {
				break
			}
			wg.Go(func() {
				bufs[k].Reset()
				errs[k] = encodeElems(&bufs[k], a, min(a+listBlock, n), elem)
			})
		}
		wg.Wait()
		for k := range workers {
			if lo+k*listBlock >= n {
				break
			}
			if errs[k] != nil {
				return errs[k]
			}
			bw.Write(bufs[k].Bytes())
		}
	}
	bw.Write(tail)
	return bw.Flush()
}

// listBlock is how many elements of a list one worker encodes at a time.
const listBlock = 256

// splitListJSON encodes doc, whose list key holds null, indented and
// escaped, and returns what stands before the list's first element (up to
// its `[` and the first element's indent) and after its last (from its
// `]` to the document's final newline). The list's null is found by its
// `\n  "KEY": null`: at the top level's indent, which nothing inside a
// string can spell, a newline being escaped there.
func splitListJSON(doc any, key string) (head, tail []byte, err error) {
	d, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encode json: %w", err)
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode json: %w", err)
	}
	mark := append(append([]byte("\n  "), k...), ": null"...)
	at := bytes.Index(d, mark)
	if at < 0 || bytes.Contains(d[at+1:], mark) {
		return nil, nil, fmt.Errorf("encode json: key %s is not the document's once", k)
	}
	// Clipped: escapeJSON may return its input, which an append must not
	// extend over the tail.
	head = append(escapeJSON(slices.Clip(d[:at+len(mark)-len("null")])), "[\n    "...)
	tail = append(append([]byte("\n  ]"), escapeJSON(d[at+len(mark):])...), '\n')
	return head, tail, nil
}

// encodeElems appends elements lo…hi-1 to dst as they stand in the
// indented list, escaped, each after a comma but the list's first.
func encodeElems(dst *bytes.Buffer, lo, hi int, elem func(int) any) error {
	var e elemEncoder
	for i := lo; i < hi; i++ {
		if err := e.add(dst, i == 0, elem(i)); err != nil {
			return err
		}
	}
	return nil
}

// elemEncoder encodes a list's elements as they stand in the indented
// document, reusing its buffers from one to the next.
type elemEncoder struct {
	e, ind bytes.Buffer
	enc    *json.Encoder
}

// add appends v to dst, after a comma unless it is the list's first.
func (x *elemEncoder) add(dst *bytes.Buffer, first bool, v any) error {
	if x.enc == nil {
		x.enc = json.NewEncoder(&x.e)
	}
	x.e.Reset()
	x.ind.Reset()
	if err := x.enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	// Encode ends with a newline; MarshalIndent has none there.
	if err := json.Indent(&x.ind, bytes.TrimSuffix(x.e.Bytes(), []byte("\n")), "    ", "  "); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	if !first {
		dst.WriteString(",\n    ")
	}
	dst.Write(escapeJSON(x.ind.Bytes()))
	return nil
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
