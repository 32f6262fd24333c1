package dirstore

import (
	"bytes"
	"fmt"
	"sync"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/sporectl/sporectl/internal/parallel"
	"github.com/sporectl/sporectl/state"
)

// lazyRow is a row of state.json not decoded yet: its line's payload,
// checked against its CRC when the snapshot was read, and what the model
// needs of every row without decoding it (format §9), read from the
// line's known shape (rowPrefix). A command about one spore decodes one
// row, not the fleet's. It is decoded once, on first use, by whichever
// reader of the (immutable, shared) model asks first.
type lazyRow struct {
	id   string
	file string // for errors: state.json
	line int    // its line number, 0 when found by bisection (snapRows)
	off  int64  // where its line begins when found by bisection, else -1
	// rows is the snapshot it was found in by bisection, which counts
	// its line for an error; nil when its line is known.
	rows *snapRows
	atTx uint64 // the snapshot's transaction, for checkRow
	data []byte // kept: a compaction writes an undecoded row as it is
	// eager: decoded when the snapshot was read, since its line is not
	// of this format's shape; a compaction encodes it anew.
	eager bool

	// What the line's shape said: its event log's name, whether its
	// outbox holds anything. The decoded row must agree.
	log    string
	queued bool
	// raw is the whole line, as it is on disk, of a row whose checksum
	// does not match (damagedRow): its damage is its spore's alone, and a
	// compaction writes the line back byte for byte, never framed anew
	// (which would pass the damage off as sound).
	raw []byte

	once sync.Once
	r    *row
	err  error
}

// rowPrefix is how every row this format writes begins: encoding/json
// writes rowJSON's fields in order, and the wish's first is its id.
var rowPrefix = []byte(`{"wish":{"id":"`)

// The keys that follow the wish and the status at the row's top level.
// Inside a JSON string a quote is always escaped, so these bytes, with
// their unescaped quotes, occur only as keys; only the row's own "log"
// and "outbox" have these names (rowJSON).
var (
	statusKey = []byte(`},"status":{`)
	logKey    = []byte(`},"log":{"file":"`)
	outboxKey = []byte(`},"outbox":[`)
)

// peekRow reads what the model needs of a row from its payload, without
// decoding it: its id, its event log's name and whether its outbox holds
// anything. ok is false for a payload not of the shape this format
// writes (a row written by hand, say), which is then decoded at once.
// Names are checked as checkRow checks them, so no unchecked name is ever
// a path.
func peekRow(p []byte, atTx uint64) (id, log string, queued, ok bool) {
	rest, found := bytes.CutPrefix(p, rowPrefix)
	if !found {
		return "", "", false, false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return "", "", false, false
	}
	id = string(rest[:end])
	if state.ValidateID(id) != nil {
		return "", "", false, false
	}
	// Each search stops at, or starts from, where its key is: the status
	// after the wish, the log near the end (only the outbox and the token
	// follow it). A key found at the wrong place yields names that
	// the decoded row then contradicts (get reports that line), and the
	// names are checked as paths either way.
	if !bytes.Contains(rest, statusKey) {
		return "", "", false, false
	}
	at := bytes.LastIndex(p, logKey)
	if at < 0 {
		return "", "", false, false
	}
	file := p[at+len(logKey):]
	end = bytes.IndexByte(file, '"')
	if end <= 0 {
		return "", "", false, false
	}
	log = string(file[:end])
	if tx, okLog := logTx(id, log); !okLog || tx > atTx {
		return "", "", false, false
	}
	return id, log, bytes.Contains(file[end:], outboxKey), true
}

// get decodes the row once; a row that does not decode, or does not say
// what its shape said, is corruption of its line.
func (l *lazyRow) get() (*row, error) {
	l.once.Do(func() {
		r, bad := decodeRow(l.data, formatVersion, l.atTx)
		switch {
		case bad != "":
		case r.Spore.ID != l.id:
			bad = fmt.Sprintf("row's spore %q is not the %q its line names", r.Spore.ID, l.id)
		case r.Log.File != l.log:
			bad = fmt.Sprintf("row's event log %q is not the %q its line names", r.Log.File, l.log)
		case (len(r.Outbox) > 0) != l.queued:
			bad = "row's outbox is not what its line says"
		}
		if bad != "" {
			line := l.line
			if line == 0 && l.rows != nil {
				line = l.rows.lineAt(l.off)
			}
			l.err = &state.CorruptError{File: l.file, Line: line, Offset: l.off, Reason: bad}
			return
		}
		l.r = r
	})
	return l.r, l.err
}

// decodeRow decodes one row of a file of format, checking it as every
// command does (checkRow: its id and log name become paths).
//
// It decodes with go-json-experiment's v1 package: encoding/json's
// semantics (case-insensitive names, duplicates and invalid UTF-8 taken
// as encoding/json takes them), on the v2 decoder, which reads a row in
// one pass with 3 allocations where encoding/json validates it first and
// then decodes it with 19: a third of the time, and a whole read of a
// large fleet is mostly this (docs/performance.md, "status -o json at
// 10,000 asleep spores"). TestDecodeRowAsEncodingJSON holds the two to
// the same rows and the same refusals.
func decodeRow(p []byte, format int, atTx uint64) (*row, string) {
	var j rowJSON
	if err := jsonv1.Unmarshal(p, &j); err != nil {
		return nil, err.Error()
	}
	r := &row{}
	if bad := j.toRow(r, format); bad != "" {
		return nil, bad
	}
	if r.Spore.ID == "" {
		return nil, "row has no spore id"
	}
	if bad := checkRow(r.Spore.ID, r, atTx); bad != "" {
		return nil, bad
	}
	return r, ""
}

// decodeAll decodes every row of the snapshot not decoded yet, on every
// core: what a read of the whole fleet pays for. It fails only when the
// snapshot itself cannot be read.
func (m *model) decodeAll() error {
	c, err := m.snapContent()
	if err != nil {
		return err
	}
	var lazy []*lazyRow
	for id, l := range c.lazy {
		if _, replaced := m.rows[id]; !replaced {
			lazy = append(lazy, l)
		}
	}
	// A row that does not decode keeps its error for whoever reads it
	// (get): one spore's damage is left out of a whole read and named
	// there (state.DamagedError), not the read's failure.
	inParallel(len(lazy), func(i int) { _, _ = lazy[i].get() })
	return nil
}

// inParallel calls fn for 0…n-1 on up to every core, a worker for each
// 512 calls: row decoding, which a large fleet's whole read is mostly
// made of.
func inParallel(n int, fn func(i int)) { parallel.For(n, 512, fn) }

// damagedRow is a row's line whose frame does not check (bad says why),
// when its payload still shows whose row it is (peekRow): that spore's
// damage alone, named on its line, which every read of the spore returns
// and a whole read of the fleet leaves out (state.DamagedError). A line
// whose owner cannot be told stays the snapshot's damage. line is the
// whole line without its LF; err is its damage, named where it is.
func damagedRow(line []byte, atTx uint64, err *state.CorruptError) (*lazyRow, bool) {
	if len(line) < crcLen+1 || line[crcLen] != ' ' {
		return nil, false
	}
	id, log, queued, ok := peekRow(line[crcLen+1:], atTx)
	if !ok {
		return nil, false
	}
	l := &lazyRow{id: id, log: log, queued: queued, atTx: atTx, raw: bytes.Clone(line), data: bytes.Clone(line[crcLen+1:]), err: err}
	l.once.Do(func() {}) // decoded already: to its damage
	return l, true
}
