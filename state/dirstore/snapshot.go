package dirstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/google/renameio/v2"

	"github.com/sporectl/sporectl/state"
)

// FormatVersion is the on-disk format this package reads and writes
// (format §10). Version 2 added the spores' generation and health and the
// recovery settings; version 3 the commit log's header, which witnesses
// how far it is committed, and consecutive transaction ids; version 4 the
// spores' activity and incidents; version 5 split each row's spore record
// into its wish and its status; version 6 dead letters in the outbox;
// version 7 the model gateway's record in the status; version 8 a
// colony's scheduled prompts and their claims in the settings. Init
// upgrades a store of versions 1 to 7 in place.
const FormatVersion = 8

const (
	formatVersion = FormatVersion
	// oldestFormat is the oldest format Init can upgrade.
	oldestFormat = 1
	// headedFormat is the first format whose commit logs begin with a
	// header (format §3).
	headedFormat = 3
	formatFile   = "FORMAT"
	snapshotFile = "state.json"
	lockFile     = "lock"
	eventsDir    = "events"
	txlogPrefix  = "txlog."
)

func txlogName(gen uint64) string { return txlogPrefix + strconv.FormatUint(gen, 10) }

// snapHeader is the first line of state.json (format §3).
type snapHeader struct {
	Format   int            `json:"format"`
	Gen      uint64         `json:"gen"`
	TxID     uint64         `json:"tx"`
	Rows     int            `json:"rows"`
	Settings state.Settings `json:"settings"`
}

// encodeSnapshot renders m as state.json: every row, sorted by id (which
// is what lets a reader find one by bisection, snapRows).
func encodeSnapshot(m *model) ([]byte, error) {
	ids, err := m.ids()
	if err != nil {
		return nil, err
	}
	c, err := m.snapContent()
	if err != nil {
		return nil, err
	}
	var buf []byte
	h, err := json.Marshal(snapHeader{Format: formatVersion, Gen: m.gen, TxID: m.txid, Rows: len(ids), Settings: m.settings})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot header: %w", err)
	}
	buf = appendFrame(buf, h)
	for _, id := range ids {
		r, ok := m.rows[id]
		if !ok {
			l := c.lazy[id]
			if l.raw != nil {
				// A damaged line stays as it is, its own checksum and
				// all, until a repair sets it aside: framing it anew
				// would pass the damage off as sound.
				buf = append(append(buf, l.raw...), '\n')
				continue
			}
			if !l.eager {
				// Never changed since it was read: its line, as read (this
				// format's, checked).
				buf = appendFrame(buf, l.data)
				continue
			}
			if r, err = l.get(); err != nil {
				return nil, err
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode row %s: %w", id, err)
		}
		buf = appendFrame(buf, b)
	}
	return buf, nil
}

// writeSnapshot replaces state.json atomically and durably: renameio
// writes a temp file, fsyncs and renames it; the directory fsync makes the
// rename itself survive a power cut (renameio leaves that to us).
func writeSnapshot(root string, m *model) error {
	b, err := encodeSnapshot(m)
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(root, snapshotFile), b, 0o600); err != nil {
		return ioErr("write snapshot", err)
	}
	if err := syncDir(root); err != nil {
		return ioErr("write snapshot", err)
	}
	return nil
}

// decodeHeader parses state.json's first line, accepting a format from
// oldest to formatVersion; only the upgrade reads older ones.
func decodeHeader(name string, payload []byte, oldest int) (snapHeader, error) {
	var h snapHeader
	if err := strictUnmarshal(payload, &h); err != nil {
		return h, &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: "header: " + err.Error()}
	}
	if h.Format < oldest || h.Format > formatVersion {
		return h, &state.IncompatibleError{Where: name, Found: h.Format, Newest: formatVersion}
	}
	return h, nil
}

// decodeSnapshotFrom parses the whole of state.json; name is used in
// errors. Checksums are verified line by line, and the rows' order: a
// snapshot's rows are sorted by id, which bisection relies on. A row of
// this format is decoded when first read (lazy.go): here only its id, its
// log's name and whether it has an outbox are read from its line. One of
// another shape, or of an older format (which only the upgrade reads), is
// decoded now.
func decodeSnapshotFrom(name string, data []byte, oldest int) (*snapContent, error) {
	var lines [][]byte
	// unframed: the rows whose frame does not check, by index in lines
	// (the whole line kept): each one's damage is its spore's when its
	// payload still names it (damagedRow), the snapshot's otherwise.
	var unframed map[int]*state.CorruptError
	var raws map[int][]byte
	for n := 1; len(data) > 0; n++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			// A snapshot is replaced whole by rename, so a missing final
			// newline is damage, not a write in flight.
			return nil, &state.CorruptError{File: name, Line: n, Offset: -1, Reason: "line has no end (file truncated?)"}
		}
		payload, bad := unframe(data[:nl])
		if bad != "" {
			if n == 1 {
				return nil, &state.CorruptError{File: name, Line: n, Offset: -1, Reason: bad}
			}
			if unframed == nil {
				unframed, raws = map[int]*state.CorruptError{}, map[int][]byte{}
			}
			unframed[len(lines)] = &state.CorruptError{File: name, Line: n, Offset: -1, Reason: bad}
			raws[len(lines)] = data[:nl]
		}
		lines = append(lines, payload)
		data = data[nl+1:]
	}
	if len(lines) == 0 {
		return nil, &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: "empty snapshot (no header)"}
	}
	h, err := decodeHeader(name, lines[0], oldest)
	if err != nil {
		return nil, err
	}
	rows := lines[1:]
	if len(rows) != h.Rows {
		return nil, &state.CorruptError{File: name, Line: len(lines), Offset: -1, Reason: fmt.Sprintf("header says %d rows, found %d", h.Rows, len(rows))}
	}
	c := &snapContent{header: h, lazy: make(map[string]*lazyRow, h.Rows), sorted: make([]string, 0, len(rows))}
	// One allocation for the rows.
	slots := make([]lazyRow, len(rows))
	peeked := make([]bool, len(rows))
	if h.Format == formatVersion {
		// Each line is read on its own: on every core, as decoding was.
		inParallel(len(rows), func(i int) {
			if _, bad := unframed[i+1]; bad {
				return
			}
			l := &slots[i]
			l.id, l.log, l.queued, peeked[i] = peekRow(rows[i], h.TxID)
		})
	}
	for i, err := range unframed {
		if i == 0 {
			continue // the header, refused above
		}
		d, ok := damagedRow(raws[i], h.TxID, err)
		if !ok || h.Format != formatVersion {
			return nil, err
		}
		l := &slots[i-1]
		l.id, l.log, l.queued, l.raw, l.err = d.id, d.log, d.queued, d.raw, d.err
		l.once.Do(func() {}) // decoded already: to its damage
		peeked[i-1] = true
	}
	var eager []int
	for i := range rows {
		if !peeked[i] {
			eager = append(eager, i)
		}
	}
	decoded := make([]*row, len(eager))
	errs := make([]string, len(eager))
	inParallel(len(eager), func(k int) {
		// The header's format says which form its rows have.
		decoded[k], errs[k] = decodeRow(rows[eager[k]], h.Format, h.TxID)
	})
	for k, i := range eager {
		if errs[k] != "" {
			return nil, &state.CorruptError{File: name, Line: i + 2, Offset: -1, Reason: errs[k]}
		}
		l, r := &slots[i], decoded[k]
		l.id, l.log, l.queued, l.eager = r.Spore.ID, r.Log.File, len(r.Outbox) > 0, true
		l.once.Do(func() { l.r = r })
	}
	for i, p := range rows {
		line := i + 2
		l := &slots[i]
		l.file, l.line, l.off, l.atTx, l.data = name, line, -1, h.TxID, p
		if l.raw != nil {
			l.data = l.raw[crcLen+1:]
		}
		if _, dup := c.lazy[l.id]; dup {
			return nil, &state.CorruptError{File: name, Line: line, Offset: -1, Reason: fmt.Sprintf("spore %q appears twice", l.id)}
		}
		if n := len(c.sorted); n > 0 && c.sorted[n-1] > l.id {
			return nil, &state.CorruptError{File: name, Line: line, Offset: -1, Reason: fmt.Sprintf("spore %q is out of order (rows are sorted by id; %q comes before it)", l.id, c.sorted[n-1])}
		}
		c.lazy[l.id] = l
		c.sorted = append(c.sorted, l.id)
		if l.queued {
			if c.queued == nil {
				c.queued = map[string]struct{}{}
			}
			c.queued[l.id] = struct{}{}
		}
	}
	return c, nil
}

func readSnapshot(root string) (*model, os.FileInfo, error) {
	return readSnapshotFrom(root, formatVersion)
}

// readSnapshotFrom opens state.json and reads its header (and, if it is
// small or of an older format, all of it; openRows). The file stays open
// for the rows found later.
func readSnapshotFrom(root string, oldest int) (*model, os.FileInfo, error) {
	f, err := openFile(filepath.Join(root, snapshotFile), snapshotFile, os.O_RDONLY, false)
	if err != nil {
		return nil, nil, storeErr("read snapshot", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, ioErr("read snapshot", err)
	}
	snap, err := openRows(f, fi.Size(), oldest)
	if err != nil || snap.f == nil {
		f.Close()
	}
	if err != nil {
		return nil, nil, err
	}
	snap.file = fileIdentity(fi)
	return newModel(snap), fi, nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.ReadAt(b[n:], int64(n))
		n += k
		if err != nil {
			if n == len(b) {
				break
			}
			return n, err
		}
	}
	return n, nil
}

// strictUnmarshal refuses unknown fields, so a hand-edited typo is an
// error rather than a silently ignored setting.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}
