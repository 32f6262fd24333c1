package dirstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sporectl/sporectl/state"
)

// txlogScan is what parsing a commit log found (format §3, §6).
type txlogScan struct {
	records []*txRecord
	ends    []int64 // end of each record's line, from the start of the data
	good    int64   // bytes up to the end of the last good record
	lines   int     // good records parsed
	torn    string  // why the bytes past good are a torn tail; "" if none
}

// parseTxlog parses commit-log bytes that follow transaction afterTx, the
// first of them on line firstLine. Bytes after the last LF are a torn tail
// (a commit whose write never finished) and are reported, not parsed. A
// complete line that does not check out is corruption, wherever it is.
// format is the format of the snapshot the log follows, which its records
// share: from format 3 on each record must be exactly the next
// transaction, so that a record cut out of the middle is noticed, and its
// rows have that format's form (format §3).
func parseTxlog(name string, data []byte, afterTx uint64, firstLine int, format int) (*txlogScan, error) {
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
		rec, bad := decodeTxRecord(raw, last, format)
		if bad != "" {
			// A record is written whole with its LF last, so a line that
			// has its LF but not its checksum was damaged after it was
			// written — perhaps after it was acknowledged. Never dropped.
			return nil, &state.CorruptError{File: name, Line: line, Offset: -1, Reason: bad}
		}
		sc.records = append(sc.records, rec)
		last = rec.TxID
		off += int64(nl + 1)
		sc.ends = append(sc.ends, off)
		sc.good = off
		sc.lines++
		data = rest
	}
	return sc, nil
}

func decodeTxRecord(raw []byte, lastTx uint64, format int) (*txRecord, string) {
	payload, bad := unframe(raw)
	if bad != "" {
		return nil, bad
	}
	var j txRecordJSON
	if err := json.Unmarshal(payload, &j); err != nil {
		return nil, "transaction record: " + err.Error()
	}
	if j.TxID <= lastTx {
		return nil, fmt.Sprintf("transaction %d does not follow transaction %d", j.TxID, lastTx)
	}
	if format >= headedFormat && j.TxID != lastTx+1 {
		return nil, fmt.Sprintf("transaction %d follows transaction %d: the records of transactions %d to %d are missing", j.TxID, lastTx, lastTx+1, j.TxID-1)
	}
	rec := &txRecord{TxID: j.TxID, At: j.At, Settings: j.Settings}
	if j.Rows != nil {
		rec.Rows = make(map[string]*row, len(j.Rows))
	}
	for id, rj := range j.Rows {
		var r *row // nil: the spore was deleted
		if rj != nil {
			r = new(row)
			if bad := rj.toRow(r, format); bad != "" {
				return nil, fmt.Sprintf("spore %q: %s", id, bad)
			}
		}
		if bad := checkRow(id, r, rec.TxID); bad != "" {
			return nil, bad
		}
		rec.Rows[id] = r
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

// --- the commit log's header (format §3, since format 3) -------------------

// A commit log begins with two header slots, lines 1 and 2, each exactly
// slotSize bytes: a framed JSON object padded with spaces. Both say which
// log this is (log = its generation, base = the snapshot's transaction it
// follows); each says how far the log was committed when it was written:
// transaction tx, whose record ends at byte end. A writer rewrites one slot
// in place after every commit's fsync (slot tx%2, so the other keeps the
// previous value while it writes), without an fsync of its own: the next
// commit's fsync carries it. The header is therefore never ahead of what is
// durably committed, and usually right up to it; a log whose records end
// before the header's end lost committed records, which is corruption,
// not a torn tail.
const (
	slotSize   = 128
	headerSize = 2 * slotSize
	// headerLines is how many lines the header takes.
	headerLines = 2
)

type logHeader struct {
	Log  uint64 `json:"log"`
	Base uint64 `json:"base"`
	TX   uint64 `json:"tx"`
	End  int64  `json:"end"`
}

// newHeader is the header of an empty log of generation gen after base.
func newHeader(gen, base uint64) []byte {
	h := logHeader{Log: gen, Base: base, TX: base, End: headerSize}
	return append(encodeSlot(h), encodeSlot(h)...)
}

func encodeSlot(h logHeader) []byte {
	b, err := json.Marshal(h)
	if err != nil {
		panic(err) // four integers
	}
	pad := slotSize - crcLen - 2 - len(b)
	if pad < 0 {
		panic("commit log header slot overflows")
	}
	return appendFrame(nil, append(b, bytes.Repeat([]byte(" "), pad)...))
}

// decodeSlot parses one slot, or says why it is not one.
func decodeSlot(b []byte) (logHeader, string) {
	var h logHeader
	if len(b) != slotSize || b[slotSize-1] != '\n' {
		return h, fmt.Sprintf("not a header slot (want %d bytes ending in an end of line)", slotSize)
	}
	payload, bad := unframe(b[:slotSize-1])
	if bad != "" {
		return h, bad
	}
	if err := strictUnmarshal(bytes.TrimRight(payload, " "), &h); err != nil {
		return h, "header slot: " + err.Error()
	}
	return h, ""
}

// slotIndex is the slot a writer rewrites after committing transaction tx.
func slotIndex(tx uint64) int64 { return int64(tx % 2) }

// readLogHeader reads the header of the live commit log of generation gen,
// which follows transaction base, and returns the further committed of its
// two slots. One unreadable slot is what a header write cut short leaves
// (a note, returned as such); two, or a slot that reads but names another
// log, is damage.
func readLogHeader(f *os.File, name string, gen, base uint64) (logHeader, string, error) {
	var buf [headerSize]byte
	for attempt := 0; ; attempt++ {
		n, err := f.ReadAt(buf[:], 0)
		if n < headerSize {
			if err != nil && !errors.Is(err, io.EOF) {
				return logHeader{}, "", ioErr("read commit log", err)
			}
			return logHeader{}, "", &state.CorruptError{File: name, Line: 1 + n/slotSize, Offset: -1, Reason: fmt.Sprintf("the commit log has %d bytes, less than its %d-byte header: it was truncated", n, headerSize)}
		}
		var hs [2]logHeader
		var bad [2]string
		for i := range hs {
			hs[i], bad[i] = decodeSlot(buf[i*slotSize : (i+1)*slotSize])
			if bad[i] != "" {
				continue
			}
			if why := checkSlot(hs[i], gen, base); why != "" {
				// A torn write cannot pass the checksum: this slot says
				// something else than what the snapshot does.
				return logHeader{}, "", &state.CorruptError{File: name, Line: i + 1, Offset: -1, Reason: why}
			}
		}
		switch {
		case bad[0] == "" && bad[1] == "":
			if hs[1].TX > hs[0].TX {
				return hs[1], "", nil
			}
			return hs[0], "", nil
		case bad[0] == "":
			return hs[0], fmt.Sprintf("header slot 2 is unreadable (%s); slot 1 is used: a header write cut short by a crash (the next commit rewrites it), or damage", bad[1]), nil
		case bad[1] == "":
			return hs[1], fmt.Sprintf("header slot 1 is unreadable (%s); slot 2 is used: a header write cut short by a crash (the next commit rewrites it), or damage", bad[0]), nil
		}
		// A writer rewrites one slot at a time; a read that met both
		// mid-write is all but impossible, but costs nothing to retry.
		if attempt >= 2 {
			return logHeader{}, "", &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: fmt.Sprintf("both header slots are unreadable (%s; %s)", bad[0], bad[1])}
		}
		time.Sleep(time.Millisecond)
	}
}

func checkSlot(h logHeader, gen, base uint64) string {
	switch {
	case h.Log != gen:
		return fmt.Sprintf("header is of commit log %d, not %d", h.Log, gen)
	case h.Base != base:
		return fmt.Sprintf("header says the log follows transaction %d, the snapshot says %d", h.Base, base)
	case h.TX < h.Base || h.End < headerSize || (h.TX == h.Base) != (h.End == headerSize):
		return fmt.Sprintf("header records transaction %d ending at byte %d, which cannot be", h.TX, h.End)
	}
	return ""
}

// checkHeader compares what a reader parsed with what the header says is
// committed: records parsed from byte from (the first after transaction
// fromTx) to from+sc.good. Records the header counts as committed must all
// be there: fewer is a log that lost acknowledged transactions (cut off by
// a truncate, say), never a torn tail.
func checkHeader(name string, h logHeader, from int64, fromTx uint64, sc *txlogScan, nextLine int) error {
	last := fromTx
	if n := len(sc.records); n > 0 {
		last = sc.records[n-1].TxID
	}
	end := from + sc.good
	if h.TX > last || h.End > end {
		return &state.CorruptError{File: name, Line: nextLine, Offset: -1, Reason: fmt.Sprintf(
			"committed transactions are missing: the header records transaction %d, ending at byte %d, as committed, but the log's records end with transaction %d at byte %d (records were cut off its end)",
			h.TX, h.End, last, end)}
	}
	if h.End <= from {
		if h.TX > fromTx {
			return &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: fmt.Sprintf("header records transaction %d ending at byte %d, before the record of transaction %d ends", h.TX, h.End, fromTx)}
		}
		return nil
	}
	for i, e := range sc.ends {
		if from+e == h.End {
			if sc.records[i].TxID != h.TX {
				break
			}
			return nil
		}
	}
	return &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: fmt.Sprintf("header records transaction %d ending at byte %d, but no record of it ends there", h.TX, h.End)}
}

// writeHeader records, after the commit of transaction h.TX is durable,
// that the log is committed up to h.End (format §5 step 4). No fsync: the
// next commit's fsync of this file carries it.
func writeHeader(f *os.File, h logHeader) error {
	_, err := writeAt(f, encodeSlot(h), slotIndex(h.TX)*slotSize)
	return err
}
