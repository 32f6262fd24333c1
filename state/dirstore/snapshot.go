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

// FormatVersion is the newest on-disk format this package reads and writes.
const FormatVersion = 1

const (
	formatVersion = FormatVersion
	formatFile    = "FORMAT"
	snapshotFile  = "state.json"
	lockFile      = "lock"
	eventsDir     = "events"
	txlogPrefix   = "txlog."
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

// encodeSnapshot renders m as state.json.
func encodeSnapshot(m *model) ([]byte, error) {
	var buf []byte
	h, err := json.Marshal(snapHeader{Format: formatVersion, Gen: m.gen, TxID: m.txid, Rows: len(m.rows), Settings: m.settings})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot header: %w", err)
	}
	buf = appendFrame(buf, h)
	for _, id := range m.ids() {
		b, err := json.Marshal(m.rows[id])
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

// decodeSnapshot parses state.json; name is used in errors.
func decodeSnapshot(name string, data []byte) (*model, error) {
	lines := 0
	var m *model
	want := -1
	for len(data) > 0 {
		lines++
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			// A snapshot is replaced whole by rename, so a missing final
			// newline is damage, not a write in flight.
			return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: "line has no end (file truncated?)"}
		}
		line := data[:nl]
		data = data[nl+1:]
		payload, bad := unframe(line)
		if bad != "" {
			return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: bad}
		}
		if m == nil {
			var h snapHeader
			if err := strictUnmarshal(payload, &h); err != nil {
				return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: "header: " + err.Error()}
			}
			if h.Format != formatVersion {
				return nil, &state.IncompatibleError{Where: name, Found: h.Format, Newest: formatVersion}
			}
			m = &model{gen: h.Gen, txid: h.TxID, settings: h.Settings, rows: make(map[string]*row, h.Rows)}
			want = h.Rows
			continue
		}
		r := new(row)
		if err := strictUnmarshal(payload, r); err != nil {
			return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: err.Error()}
		}
		if r.Spore.ID == "" {
			return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: "row has no spore id"}
		}
		if _, dup := m.rows[r.Spore.ID]; dup {
			return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: fmt.Sprintf("spore %q appears twice", r.Spore.ID)}
		}
		m.rows[r.Spore.ID] = r
	}
	if m == nil {
		return nil, &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: "empty snapshot (no header)"}
	}
	if len(m.rows) != want {
		return nil, &state.CorruptError{File: name, Line: lines, Offset: -1, Reason: fmt.Sprintf("header says %d rows, found %d", want, len(m.rows))}
	}
	return m, nil
}

func readSnapshot(root string) (*model, os.FileInfo, error) {
	f, err := os.Open(filepath.Join(root, snapshotFile))
	if err != nil {
		return nil, nil, ioErr("read snapshot", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, ioErr("read snapshot", err)
	}
	data := make([]byte, fi.Size())
	if _, err := readFull(f, data); err != nil {
		return nil, nil, ioErr("read snapshot", err)
	}
	m, err := decodeSnapshot(snapshotFile, data)
	return m, fi, err
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
