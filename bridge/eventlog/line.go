package eventlog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/sporectl/sporectl/bridge"
)

// MaxLine is the largest line stored as it came, the contract's
// bridge.MaxLineBytes. A longer line (or one whose JSON string form is
// longer) is replaced by a truncation marker (see Truncated), so one
// runaway tool output can neither exhaust memory nor make a page of events
// unservable, and no line served breaks the contract.
const MaxLine = bridge.MaxLineBytes

// TruncatedHead is how much of an oversized line the marker keeps.
const TruncatedHead = 4 << 10

// Normalize turns one raw line of agent output (without its newline) into
// what the log stores: the line itself when it is valid UTF-8 JSON, else a
// JSON string holding it with every invalid byte written as the four
// characters \xNN. It never fails.
func Normalize(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > MaxLine {
		return Truncated(raw[:TruncatedHead], len(raw))
	}
	if utf8.Valid(raw) && json.Valid(raw) && bytes.IndexByte(raw, '\n') < 0 {
		return append(json.RawMessage(nil), raw...)
	}
	// Escapes can make the string form up to six times the line.
	if q := quote(raw); len(q) <= MaxLine {
		return q
	}
	return Truncated(raw[:min(len(raw), TruncatedHead)], len(raw))
}

// Truncated is the marker stored in place of a line of total bytes, of
// which head is the beginning. Its type "bridge" keeps it apart from every
// Claude Code line type.
func Truncated(head []byte, total int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"bridge","subtype":"line_truncated","original_bytes":`)
	b.WriteString(strconv.Itoa(total))
	b.WriteString(`,"head":`)
	b.Write(quote(head))
	b.WriteString(`}`)
	return b.Bytes()
}

// quote makes a JSON string of b, escaping invalid UTF-8 as \xNN text.
func quote(b []byte) json.RawMessage {
	var s bytes.Buffer
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			s.WriteString(`\x`)
			s.WriteString(strconv.FormatUint(uint64(b[0])>>4, 16))
			s.WriteString(strconv.FormatUint(uint64(b[0])&0xf, 16))
		} else {
			s.Write(b[:size])
		}
		b = b[size:]
	}
	out, _ := json.Marshal(s.String())
	return out
}
