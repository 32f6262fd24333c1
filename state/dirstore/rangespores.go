package dirstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"

	"github.com/sporectl/sporectl/state"
)

// RangeSpores calls fn with every spore's row, in id order, as this
// transaction sees it. Unlike Spores it keeps nothing: a pass over the
// fleet that judges and prints spore by spore (reconcile's stream.go,
// `status -o json` of 10,000 spores) holds a block of rows, not the
// fleet's. A snapshot not read whole yet is read line by line from its
// file and each row decoded for the call and dropped (the whole read
// would keep the file and an index of every line; lazyRow.get, the
// decoded row in the model for every later reader); one read whole is
// ranged over as it is. fn must not keep what it is given.
//
// A line it cannot take as it goes (a frame or a row that does not
// check, rows out of order or twice, fewer or more than the header says)
// ends the range with a *state.CorruptError naming it: a caller that
// judges the damaged spores reads them with Spores, which reads the
// snapshot whole and tells a spore's damage from the file's.
func (t *tx) RangeSpores(ctx context.Context, fn func(*state.SporeRow) error) error {
	blocks := make(chan rangeBlock, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(blocks)
		b := &rangeBuilder{out: blocks, stop: stop}
		err := t.rangeRows(b)
		if err == nil {
			err = b.flush()
		}
		if err != nil && err != errRangeStopped {
			// The rows before what ended it are handed on first.
			select {
			case blocks <- rangeBlock{rows: b.rows, err: err}:
			case <-stop:
			}
		}
	}()
	for b := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, r := range b.rows {
			sr := state.SporeRow{Spore: &r.Spore, Head: state.SporeHead{LastSeq: r.Log.LastSeq}, Outbox: r.Outbox}
			if err := fn(&sr); err != nil {
				return err
			}
		}
		if b.err != nil {
			return b.err
		}
	}
	return nil
}

// rangeAhead is how many rows RangeSpores reads and decodes ahead of its
// caller, on another core, while the caller judges the ones before.
const rangeAhead = 256

// rangeBlock is a block of rows in id order, or what ended the range.
type rangeBlock struct {
	rows []*row
	err  error
}

// errRangeStopped: the caller left the range (its fn failed).
var errRangeStopped = fmt.Errorf("range stopped")

// rangeBuilder gathers rows into blocks for RangeSpores's caller.
type rangeBuilder struct {
	out  chan<- rangeBlock
	stop <-chan struct{}
	rows []*row
}

func (b *rangeBuilder) add(r *row) error {
	b.rows = append(b.rows, r)
	if len(b.rows) < rangeAhead {
		return nil
	}
	return b.flush()
}

func (b *rangeBuilder) flush() error {
	if len(b.rows) == 0 {
		return nil
	}
	select {
	case b.out <- rangeBlock{rows: b.rows}:
		b.rows = make([]*row, 0, rangeAhead)
		return nil
	case <-b.stop:
		return errRangeStopped
	}
}

// rangeRows hands b every row of the transaction, in id order: the
// snapshot's, under the rows committed since (the base model's) and the
// transaction's own, which replace them (nil: deleted).
func (t *tx) rangeRows(b *rangeBuilder) error {
	over := map[string]*row{}
	for id, r := range t.base.rows {
		over[id] = r
	}
	for id, r := range t.rows {
		over[id] = r
	}
	ids := make([]string, 0, len(over))
	for id := range over {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Each row of the snapshot comes after the overlay's rows before it;
	// an overlay's row of the same id replaces it.
	next := 0
	before := func(id string, last bool) error {
		for ; next < len(ids) && (last || ids[next] < id); next++ {
			if r := over[ids[next]]; r != nil {
				if err := b.add(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	emit := func(id string, snap func() (*row, error)) error {
		if err := before(id, false); err != nil {
			return err
		}
		if r, ok := over[id]; ok {
			next++
			if r == nil {
				return nil
			}
			return b.add(r)
		}
		r, err := snap()
		if err != nil {
			return err
		}
		return b.add(r)
	}
	if err := t.rangeSnapshot(emit); err != nil {
		return err
	}
	return before("", true) // the overlay's rows after the snapshot's last
}

// rangeSnapshot calls emit with each snapshot row's id and how to decode
// it, in id order.
func (t *tx) rangeSnapshot(emit func(id string, snap func() (*row, error)) error) error {
	s := t.base.snap
	if s == nil {
		return nil // made in memory: the overlay is every row
	}
	f, start, size, ok := s.dupFile()
	if !ok {
		// Read whole already: its index, each row as a reader would get it
		// (decoded once, kept: the model holds it anyway).
		c, err := s.content()
		if err != nil {
			return err
		}
		for _, id := range c.sorted {
			l := c.lazy[id]
			if err := emit(id, l.get); err != nil {
				return err
			}
		}
		return nil
	}
	defer f.Close()
	return rangeLines(s, io.NewSectionReader(f, start, size-start), emit)
}

// rangeLines reads the snapshot's rows from r, line by line, checking
// each as decodeSnapshotFrom does, and calls emit for each.
func rangeLines(s *snapRows, r io.Reader, emit func(id string, snap func() (*row, error)) error) error {
	h := s.header
	br := bufio.NewReaderSize(r, 64<<10)
	corrupt := func(line int, reason string) error {
		return &state.CorruptError{File: s.name, Line: line, Offset: -1, Reason: reason}
	}
	prev := ""
	n := 0
	for line := 2; ; line++ {
		text, err := br.ReadSlice('\n')
		if err == io.EOF && len(text) == 0 {
			break
		}
		if err == bufio.ErrBufferFull {
			// A row longer than the buffer: gathered whole.
			long := slices.Clone(text)
			for err == bufio.ErrBufferFull {
				text, err = br.ReadSlice('\n')
				long = append(long, text...)
			}
			text = long
		}
		if err == io.EOF {
			return corrupt(line, "line has no end (file truncated?)")
		}
		if err != nil {
			return ioErr("read snapshot", err)
		}
		payload, bad := unframe(text[:len(text)-1])
		if bad != "" {
			return corrupt(line, bad)
		}
		l := &lazyRow{file: s.name, line: line, off: -1, atTx: h.TxID, data: payload}
		var ok bool
		l.id, l.log, l.queued, ok = peekRow(payload, h.TxID)
		if !ok {
			// A row of another shape: decoded now, as the whole read does.
			r, bad := decodeRow(payload, h.Format, h.TxID)
			if bad != "" {
				return corrupt(line, bad)
			}
			l.id, l.log, l.queued = r.Spore.ID, r.Log.File, len(r.Outbox) > 0
			l.once.Do(func() { l.r = r })
		}
		switch {
		case l.id == prev:
			return corrupt(line, fmt.Sprintf("spore %q appears twice", l.id))
		case l.id < prev:
			return corrupt(line, fmt.Sprintf("spore %q is out of order (rows are sorted by id; %q comes before it)", l.id, prev))
		}
		prev = l.id
		n++
		// Decoded before the next line is read: payload is the reader's.
		if err := emit(l.id, l.get); err != nil {
			return err
		}
	}
	if n != h.Rows {
		return corrupt(n+1, fmt.Sprintf("header says %d rows, found %d", h.Rows, n))
	}
	return nil
}

// dupFile is a file of its own on the snapshot's open file, where its
// rows start and its size, while it has not been read whole (ok false
// once it has): a whole read by another reader closes the snapshot's.
func (s *snapRows) dupFile() (f *os.File, start, size int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded || s.f == nil {
		return nil, 0, 0, false
	}
	fd, err := syscall.Dup(int(s.f.Fd()))
	if err != nil {
		return nil, 0, 0, false
	}
	return os.NewFile(uintptr(fd), s.f.Name()), s.start, s.size, true
}
