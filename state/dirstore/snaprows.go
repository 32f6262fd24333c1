package dirstore

import (
	"bytes"
	"errors"
	"os"
	"sync"

	"github.com/sporectl/sporectl/state"
)

// snapRows are the rows of one state.json. A large snapshot is not read
// whole when the state is loaded: a command about a few named spores
// finds their lines by bisection over the file's byte offsets, since
// encodeSnapshot writes the rows sorted by id (format §9), and reads a few
// blocks of a file of any size. The first read that needs every row (the
// fleet's, the outbox index, a compaction, check) reads the file whole,
// once, and checks it as loading always did.
//
// The file stays open while rows are found one by one, so what is found
// is always this snapshot's, even after a compaction renamed a newer one
// over its name; it is closed once the whole file is read (or by the
// garbage collector, os.File's finalizer, when no model uses it).
// A snapRows is shared by every model built on its snapshot and is safe
// for concurrent use.
type snapRows struct {
	name   string     // state.json, for errors
	header snapHeader // its first line
	// file is which state.json it is: its inode, size and modification
	// time when it was opened, for Revision.
	file string

	mu    sync.Mutex
	f     *os.File // nil once the whole file is read
	size  int64
	start int64               // where the first row begins (after the header)
	found map[string]*lazyRow // rows found by bisection; nil: absent
	// lines are the line numbers of the rows found by bisection, by
	// where they begin, learnt when the whole file is read: a found
	// row's error names its line after the file is closed.
	lines map[int64]int

	allOnce sync.Once
	all     *snapContent
	allErr  error
	loaded  bool // all is set (under mu); finds use it from then on
}

// snapContent is a snapshot read whole: every row not decoded yet, or
// decoded at once when its line is not of the shape this format writes
// (an older format's, one written by hand; lazyRow.eager).
type snapContent struct {
	header snapHeader
	lazy   map[string]*lazyRow
	sorted []string
	// queued holds the ids whose outbox is not empty.
	queued map[string]struct{}
}

// sparseFrom is the size from which a snapshot's rows are found by
// bisection rather than read whole at load. Below it reading the file is
// a few blocks anyway. A variable so that tests can bisect small files.
var sparseFrom int64 = 64 << 10

// probeSpan is how much of the file bisection narrows its search to
// before it reads the rest whole: a few rows' lines.
const probeSpan = 4 << 10

// errOddLine says bisection met a line it cannot order by (a row not of
// the shape this format writes): the file is then read whole.
var errOddLine = errors.New("a row of another shape")

// fullRows makes the snapRows of a snapshot already read whole.
func fullRows(c *snapContent) *snapRows {
	s := &snapRows{name: snapshotFile, header: c.header, all: c, loaded: true}
	s.allOnce.Do(func() {})
	return s
}

// content is the whole snapshot, read on first call.
func (s *snapRows) content() (*snapContent, error) {
	s.allOnce.Do(func() {
		s.mu.Lock()
		f, size := s.f, s.size
		s.mu.Unlock()
		data := make([]byte, size)
		if _, err := readFull(f, data); err != nil {
			s.allErr = ioErr("read snapshot", err)
			return
		}
		c, err := decodeSnapshotFrom(s.name, data, formatVersion)
		if err == nil && (c.header.TxID != s.header.TxID || c.header.Gen != s.header.Gen || c.header.Format != s.header.Format) {
			// The same open file: only a change of the file in place
			// (never the store's doing) can make it say something else.
			err = &state.CorruptError{File: s.name, Line: 1, Offset: -1, Reason: "the snapshot changed while it was read (edited in place?)"}
		}
		if err != nil {
			s.allErr = err
			return
		}
		s.mu.Lock()
		for id, l := range s.found {
			// A row found before is the same line: keep what reading it
			// decoded.
			if cl, ok := c.lazy[id]; ok && l != nil && !cl.eager && bytes.Equal(cl.data, l.data) {
				c.lazy[id] = l
				if s.lines == nil {
					s.lines = map[int64]int{}
				}
				s.lines[l.off] = cl.line
			}
		}
		s.all, s.loaded, s.found = c, true, nil
		s.f.Close()
		s.f = nil
		s.mu.Unlock()
	})
	return s.all, s.allErr
}

// find returns id's row, nil when the snapshot has none.
func (s *snapRows) find(id string) (*lazyRow, error) {
	s.mu.Lock()
	if s.loaded {
		s.mu.Unlock()
		return s.all.lazy[id], nil
	}
	if l, ok := s.found[id]; ok {
		s.mu.Unlock()
		return l, nil
	}
	l, err := s.bisect(id)
	s.mu.Unlock()
	if errors.Is(err, errOddLine) {
		c, err := s.content()
		if err != nil {
			return nil, err
		}
		return c.lazy[id], nil
	}
	return l, err
}

// bisect finds id's line between the header and the end of the file; s.mu
// is held. Each probe reads the whole lines of a block in the middle of
// what is left, checked as a whole read checks them and required to be
// in order, and keeps the half that can hold id.
func (s *snapRows) bisect(id string) (*lazyRow, error) {
	lo, hi := s.start, s.size // line starts (or the end of the file)
	for lo < hi {
		rows, err := s.linesAround(lo, lo+(hi-lo)/2, hi, probeSpan)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			break
		}
		first, last := rows[0], rows[len(rows)-1]
		switch {
		case id < first.id:
			hi = first.off
		case id > last.id:
			lo = last.off + int64(len(last.data)) + frameOverhead
		default:
			for _, l := range rows {
				if l.id == id {
					return l, nil
				}
			}
			return s.absent(id, lo, hi)
		}
	}
	return s.absent(id, lo, hi)
}

// frameOverhead is what a line holds besides its payload: the checksum,
// a space and the LF.
const frameOverhead = crcLen + 2

// absent confirms that id has no row, and remembers it: the lines around
// where its row would be, read again with their neighbours, must be in
// order. A row that is not where the order puts it (only a hand with the
// format's checksums can do that) is then damage, reported by the whole
// read, rather than a spore taken for absent that a create would shadow.
// A row moved far from its place is not seen here; the whole read and
// check refuse the file all the same.
func (s *snapRows) absent(id string, lo, hi int64) (*lazyRow, error) {
	if s.start == s.size {
		s.remember(id, nil) // no rows at all
		return nil, nil
	}
	at := lo
	if lo < hi {
		at = lo + (hi-lo)/2
	}
	for span := int64(probeSpan); ; span *= 2 {
		rows, err := s.linesAround(s.start, at, s.size, span)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			s.remember(id, nil)
			return nil, nil
		}
		before, after := 0, 0
		for _, l := range rows {
			switch {
			case l.id == id:
				return l, nil
			case l.id < id:
				before++
			default:
				after++
			}
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].id < id && rows[i-1].id > id {
				return nil, errOddLine
			}
		}
		if (before >= 2 || rows[0].off == s.start) && (after >= 2 || rows[len(rows)-1].off+int64(len(rows[len(rows)-1].data))+frameOverhead == s.size) {
			s.remember(id, nil)
			return nil, nil
		}
		if span >= s.size-s.start {
			s.remember(id, nil) // every line read
			return nil, nil
		}
	}
}

// linesAround returns the whole lines of a block of span bytes about mid
// between lo and hi (line starts, or the end of the file): at least one,
// checked, in order (errOddLine when not). The block grows until it holds
// one.
func (s *snapRows) linesAround(lo, mid, hi, span int64) ([]*lazyRow, error) {
	for ; ; span *= 2 {
		start, end := lo, hi
		if hi-lo > span {
			start = max(lo, mid-span/2)
			end = min(hi, start+span)
		}
		// From the byte before: if it ends a line, a line begins at start.
		from := start
		if start > lo {
			from = start - 1
		}
		buf := make([]byte, end-from)
		if _, err := s.f.ReadAt(buf, from); err != nil {
			return nil, ioErr("read snapshot", err)
		}
		off := from
		if start > lo {
			nl := bytes.IndexByte(buf, '\n')
			if nl < 0 {
				continue
			}
			off, buf = from+int64(nl)+1, buf[nl+1:]
		}
		var rows []*lazyRow
		for len(buf) > 0 {
			nl := bytes.IndexByte(buf, '\n')
			if nl < 0 {
				if end == s.size {
					return nil, s.corrupt(off, "line has no end (file truncated?)")
				}
				break
			}
			l, err := s.rowAt(off, buf[:nl])
			if err != nil {
				return nil, err
			}
			if n := len(rows); n > 0 && rows[n-1].id >= l.id {
				return nil, errOddLine // out of order: the whole read says where
			}
			rows = append(rows, l)
			off += int64(nl) + 1
			buf = buf[nl+1:]
		}
		if len(rows) > 0 || (start == lo && end == hi) {
			return rows, nil // none only when lo = hi
		}
	}
}

// rowAt checks the line at off and reads what the model needs of it, as
// loading the whole file does; the row is remembered.
func (s *snapRows) rowAt(off int64, line []byte) (*lazyRow, error) {
	payload, bad := unframe(line)
	if bad != "" {
		err := s.corrupt(off, bad).(*state.CorruptError)
		l, ok := damagedRow(line, s.header.TxID, err)
		if !ok {
			return nil, err
		}
		if f, ok := s.found[l.id]; ok && f != nil {
			return f, nil
		}
		l.file, l.off, l.rows = s.name, off, s
		s.remember(l.id, l)
		return l, nil
	}
	id, log, queued, ok := peekRow(payload, s.header.TxID)
	if !ok {
		return nil, errOddLine
	}
	if l, ok := s.found[id]; ok && l != nil {
		return l, nil
	}
	l := &lazyRow{id: id, file: s.name, off: off, rows: s, atTx: s.header.TxID, data: bytes.Clone(payload), log: log, queued: queued}
	s.remember(id, l)
	return l, nil
}

// corrupt is the damage of the line that begins at off, named by its
// line number as a whole read names it; s.mu is held. Bisection does not
// count lines, so they are counted here, on the way to an error only.
func (s *snapRows) corrupt(off int64, reason string) error {
	return &state.CorruptError{File: s.name, Line: s.lineAtLocked(off), Offset: off, Reason: reason}
}

// lineAt is the 1-based number of the line that begins at off; 0 when it
// cannot be told (the file unreadable).
func (s *snapRows) lineAt(off int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lineAtLocked(off)
}

func (s *snapRows) lineAtLocked(off int64) int {
	if s.f == nil {
		return s.lines[off]
	}
	buf := make([]byte, 64<<10)
	n := 1
	for at := int64(0); at < off; {
		b := buf[:min(int64(len(buf)), off-at)]
		if _, err := s.f.ReadAt(b, at); err != nil {
			return 0
		}
		n += bytes.Count(b, []byte{'\n'})
		at += int64(len(b))
	}
	return n
}

func (s *snapRows) remember(id string, l *lazyRow) {
	if s.found == nil {
		s.found = map[string]*lazyRow{}
	}
	s.found[id] = l
}

// openRows reads state.json's header and, for a large snapshot of this
// format, nothing more: its rows are found when asked for (snapRows). A
// small one, or one of an older format (which only the upgrade reads), is
// read and checked whole.
func openRows(f *os.File, size int64, oldest int) (*snapRows, error) {
	if size <= sparseFrom || oldest < formatVersion {
		data := make([]byte, size)
		if _, err := readFull(f, data); err != nil {
			return nil, ioErr("read snapshot", err)
		}
		c, err := decodeSnapshotFrom(snapshotFile, data, oldest)
		if err != nil {
			return nil, err
		}
		return fullRows(c), nil
	}
	line, err := firstLine(f, size)
	if err != nil {
		return nil, err
	}
	payload, bad := unframe(line)
	if bad != "" {
		return nil, &state.CorruptError{File: snapshotFile, Line: 1, Offset: -1, Reason: bad}
	}
	h, err := decodeHeader(snapshotFile, payload, oldest)
	if err != nil {
		return nil, err
	}
	s := &snapRows{name: snapshotFile, header: h, f: f, size: size, start: int64(len(line)) + 1}
	return s, nil
}

// firstLine reads state.json's first line, without its LF.
func firstLine(f *os.File, size int64) ([]byte, error) {
	var buf []byte
	for off := int64(0); off < size; {
		b := make([]byte, min(int64(16<<10), size-off))
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, ioErr("read snapshot", err)
		}
		if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
			return append(buf, b[:nl]...), nil
		}
		buf = append(buf, b...)
		off += int64(len(b))
	}
	return nil, &state.CorruptError{File: snapshotFile, Line: 1, Offset: -1, Reason: "line has no end (file truncated?)"}
}
