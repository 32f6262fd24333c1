package cli

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// stream is `status -o json` of the whole fleet by the streamed pass
// (reconcile.Pass.Stream): each spore's row is encoded as the pass judges
// it, so the fleet's records, plans and rows are never held at once, only
// the document's bytes. They are printed once the pass has judged every
// spore: a fleet with something to record (reconcile.ErrNotQuiet) is
// then printed by the whole pass instead (done false, with the look at
// the runtime the streamed pass made, for the whole pass to take),
// nothing of the streamed one shown. The document is, byte for byte, what the whole pass
// prints (writeListJSON of statusList), and the exit code its rule's.
func (o *statusOptions) stream(ctx context.Context, st state.Store) (done bool, looked *reconcile.FleetObservation, err error) {
	var rows chunked
	var enc elemEncoder
	var row bytes.Buffer
	got, err := o.f.Pass(st).Stream(ctx, func(h *reconcile.SporeHealth) error {
		row.Reset()
		if err := enc.add(&row, rows.n == 0, h); err != nil {
			return err
		}
		rows.n++
		rows.Write(row.Bytes())
		return nil
	})
	if errors.Is(err, reconcile.ErrNotQuiet) {
		return false, got.Fleet, nil
	}
	if err != nil {
		return true, nil, err
	}
	doc := statusList{Result: reconcile.Result{Orphans: got.Orphans}, now: o.f.Now()}
	if rows.n == 0 {
		doc.Spores = []reconcile.SporeHealth{}
		err = o.f.Print(doc)
	} else {
		err = writeStreamed(o.f.IO.Out, doc, &rows)
	}
	if err != nil {
		return true, nil, err
	}
	warnOrphans(o.f, got.Orphans)
	return true, nil, attention(got.Attention, got.Spores, got.Orphans)
}

// writeStreamed writes doc (its spores left out) with rows, its spores'
// encoded elements, in its list: writeListJSON's bytes.
func writeStreamed(w io.Writer, doc statusList, rows *chunked) error {
	d, key, _, _ := doc.jsonList()
	head, tail, err := splitListJSON(d, key)
	if err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, c := range rows.chunks {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	_, err = w.Write(tail)
	return err
}

// chunked holds a document's bytes in blocks that are never copied to
// grow (a buffer of 3.7 MB grown by doubling would briefly hold twice
// that); n counts the rows written.
type chunked struct {
	chunks [][]byte
	n      int
}

// chunkSize is a block's capacity: large enough for few writes to the
// output, small against the fleet's document.
const chunkSize = 256 << 10

func (c *chunked) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1]) == chunkSize {
			c.chunks = append(c.chunks, make([]byte, 0, chunkSize))
		}
		last := &c.chunks[len(c.chunks)-1]
		k := min(len(p), chunkSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return n, nil
}
