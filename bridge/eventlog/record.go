package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
)

// A record is one line of the log file:
//
//	<seq> <at> <crc> <line>\n
//
// seq is decimal, at is RFC 3339 (UTC, nanoseconds), crc is the CRC-32C of
// "<seq> <at> <line>" in 8 lower-case hex digits, and line is the stored
// JSON value. The checksum is what tells a torn or scribbled tail from data.

// Record is one numbered line.
type Record struct {
	Seq  uint64
	At   time.Time
	Line json.RawMessage
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadRecord is wrapped by every record-format error.
var ErrBadRecord = errors.New("bad record")

// appendRecord encodes r onto buf, newline included.
func appendRecord(buf []byte, r Record) []byte {
	start := len(buf)
	buf = strconv.AppendUint(buf, r.Seq, 10)
	buf = append(buf, ' ')
	buf = r.At.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	crcAt := len(buf)
	buf = append(buf, "00000000 "...)
	buf = append(buf, r.Line...)
	sum := crc32.Update(0, castagnoli, buf[start:crcAt])
	sum = crc32.Update(sum, castagnoli, buf[crcAt+9:])
	const hexdigits = "0123456789abcdef"
	for i := 0; i < 8; i++ {
		buf[crcAt+i] = hexdigits[(sum>>(28-4*i))&0xf]
	}
	return append(buf, '\n')
}

// ParseRecord decodes one record; b may or may not end with its newline.
// The returned Line aliases b.
func ParseRecord(b []byte) (Record, error) {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	i := bytes.IndexByte(b, ' ')
	if i <= 0 {
		return Record{}, fmt.Errorf("%w: no sequence number", ErrBadRecord)
	}
	seq, err := strconv.ParseUint(string(b[:i]), 10, 64)
	if err != nil || seq == 0 {
		return Record{}, fmt.Errorf("%w: sequence number %q", ErrBadRecord, truncate(b[:i]))
	}
	rest := b[i+1:]
	j := bytes.IndexByte(rest, ' ')
	if j <= 0 {
		return Record{}, fmt.Errorf("%w: no time", ErrBadRecord)
	}
	at, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	if err != nil {
		return Record{}, fmt.Errorf("%w: time %q", ErrBadRecord, truncate(rest[:j]))
	}
	rest = rest[j+1:]
	if len(rest) < 10 || rest[8] != ' ' {
		return Record{}, fmt.Errorf("%w: no checksum", ErrBadRecord)
	}
	want, err := strconv.ParseUint(string(rest[:8]), 16, 32)
	if err != nil {
		return Record{}, fmt.Errorf("%w: checksum %q", ErrBadRecord, truncate(rest[:8]))
	}
	line := rest[9:]
	crcAt := len(b) - len(rest)
	sum := crc32.Update(0, castagnoli, b[:crcAt])
	sum = crc32.Update(sum, castagnoli, line)
	if uint32(want) != sum {
		return Record{}, fmt.Errorf("%w: checksum mismatch", ErrBadRecord)
	}
	if !json.Valid(line) {
		return Record{}, fmt.Errorf("%w: line is not JSON", ErrBadRecord)
	}
	return Record{Seq: seq, At: at, Line: line}, nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}
