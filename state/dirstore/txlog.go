package dirstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// txlogScan is what parsing a commit log found (format §3, §6).
type txlogScan struct {
	records []*txRecord
	good    int64  // bytes up to the end of the last good record
	lines   int    // good records parsed
	torn    string // why the bytes past good are a torn tail; "" if none
}

// parseTxlog parses commit-log bytes. Bytes after the last LF are a torn
// tail (a commit whose write never finished) and are reported, not parsed.
// A complete line that does not check out is corruption, wherever it is.
func parseTxlog(name string, data []byte, afterTx uint64, firstLine int) (*txlogScan, error) {
	sc := &txlogScan{}
	line := firstLine - 1
	last := afterTx
	var off int64
	for len(data) > 0 {
		line++
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			sc.torn = fmt.Sprintf("line %d: %d bytes without an end of line", line, len(data))
			return sc, nil
		}
		raw := data[:nl]
		rest := data[nl+1:]
		rec, bad := decodeTxRecord(raw, last)
		if bad != "" {
			// A record is written whole with its LF last, so a line that
			// has its LF but not its checksum was damaged after it was
			// written — perhaps after it was acknowledged. Never dropped.
			return nil, &state.CorruptError{File: name, Line: line, Offset: -1, Reason: bad}
		}
		sc.records = append(sc.records, rec)
		last = rec.TxID
		off += int64(nl + 1)
		sc.good = off
		sc.lines++
		data = rest
	}
	return sc, nil
}

func decodeTxRecord(raw []byte, lastTx uint64) (*txRecord, string) {
	payload, bad := unframe(raw)
	if bad != "" {
		return nil, bad
	}
	rec := new(txRecord)
	if err := json.Unmarshal(payload, rec); err != nil {
		return nil, "transaction record: " + err.Error()
	}
	if rec.TxID <= lastTx {
		return nil, fmt.Sprintf("transaction %d does not follow transaction %d", rec.TxID, lastTx)
	}
	for id, r := range rec.Rows {
		if r != nil && r.Spore.ID != id {
			return nil, fmt.Sprintf("row keyed %q holds spore %q", id, r.Spore.ID)
		}
	}
	return rec, ""
}

func encodeTxRecord(rec *txRecord) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode transaction %d: %w", rec.TxID, err)
	}
	return appendFrame(nil, b), nil
}

func nowString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
