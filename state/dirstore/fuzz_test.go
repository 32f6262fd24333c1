package dirstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// Fuzz targets for every parser of on-disk data. Each asserts properties,
// not just "no panic": encoders and decoders round-trip, a parse error is a
// *state.CorruptError naming the file and a line, a torn tail is only ever
// the last line of a commit log, and any single flipped byte inside a
// framed line is detected.
//
// Seed inputs come from f.Add and from testdata/fuzz/<Target>/, which
// TestFuzzSeedCorpus checks and -update-fuzz-seeds rewrites from the
// encoders.

// caseOnlyFlip reports a flip the frame cannot detect. There is none: the
// checksum must be lowercase hex (format §2), so even turning a-f into A-F
// is caught. Kept as the one place to say which flips are exempt.
func caseOnlyFlip(frame []byte, i int, mask byte) bool {
	return false
}

// flipPositions returns the offsets to damage in a buffer of n bytes: all
// of them when few, else an even sample plus extra.
func flipPositions(n int, extra ...int) []int {
	if n <= 0 {
		return nil
	}
	var out []int
	if n <= 256 {
		for i := range n {
			out = append(out, i)
		}
	} else {
		for k := range 256 {
			out = append(out, k*(n-1)/255)
		}
	}
	for _, e := range extra {
		out = append(out, ((e%n)+n)%n)
	}
	return out
}

func flipped(b []byte, i int, mask byte) []byte {
	c := bytes.Clone(b)
	c[i] ^= mask
	return c
}

func nonzero(mask byte) byte {
	if mask == 0 {
		return 1
	}
	return mask
}

// lineOf returns the 1-based line holding byte i of data.
func lineOf(data []byte, i int) int { return bytes.Count(data[:i], []byte("\n")) + 1 }

func requireCorrupt(t *testing.T, err error, file string) *state.CorruptError {
	t.Helper()
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce, "want a *state.CorruptError, got %T: %v", err, err)
	require.Equal(t, file, ce.File)
	require.NotEmpty(t, ce.Reason)
	require.True(t, ce.Line >= 1 || ce.Offset >= 0, "error locates nothing: %+v", ce)
	return ce
}

// jsonEquivalent compares two JSON texts as values; the event encoder
// compacts and HTML-escapes a raw agent line, so bytes may differ.
func jsonEquivalent(t *testing.T, want, got []byte) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	dec := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		require.NoError(t, d.Decode(&v), "%q", b)
		return v
	}
	require.Equal(t, dec(want), dec(got))
}

// --- frame ---------------------------------------------------------------

func FuzzUnframe(f *testing.F) {
	f.Add([]byte(`{"tx":1}`), byte(1), uint16(0))
	f.Add(appendFrame(nil, []byte(`{"tx":1}`))[:17], byte(0x20), uint16(3))
	f.Add([]byte("00000000 "), byte(0x80), uint16(8))
	f.Add([]byte("ABCDEF01 x"), byte(0xff), uint16(9))
	f.Add([]byte("\n\n\x00"), byte(2), uint16(1))
	f.Fuzz(func(t *testing.T, line []byte, mask byte, pos uint16) {
		mask = nonzero(mask)

		// Arbitrary input: a valid frame is exactly checksum, space, payload.
		payload, bad := unframe(line)
		if bad != "" {
			require.Nil(t, payload)
		} else {
			require.GreaterOrEqual(t, len(line), crcLen+1)
			require.Equal(t, byte(' '), line[crcLen])
			require.Equal(t, line[crcLen+1:], payload)
			re := appendFrame(nil, payload)
			require.Equal(t, re[:crcLen], line[:crcLen], "checksum %q does not match %q", line[:crcLen], re[:crcLen])
			require.Equal(t, line[crcLen:], re[crcLen:len(re)-1])
		}

		// Round trip with the input as payload (any bytes, even LF).
		framed := appendFrame(nil, line)
		require.Len(t, framed, crcLen+1+len(line)+1)
		require.Equal(t, byte('\n'), framed[len(framed)-1])
		for _, c := range framed[:crcLen] {
			require.True(t, '0' <= c && c <= '9' || 'a' <= c && c <= 'f', "checksum is not lower-case hex: %q", framed[:crcLen])
		}
		got, bad := unframe(framed[:len(framed)-1])
		require.Empty(t, bad)
		require.Equal(t, line, got[:len(got):len(got)])

		// Any single damaged byte is detected.
		body := framed[:len(framed)-1]
		for _, i := range flipPositions(len(body), int(pos)) {
			d := flipped(body, i, mask)
			p, bad := unframe(d)
			if caseOnlyFlip(body, i, mask) {
				require.Empty(t, bad)
				require.Equal(t, line, p[:len(p):len(p)])
				continue
			}
			require.NotEmpty(t, bad, "flip %#x at %d of %q went undetected", mask, i, body)
		}
	})
}

// --- event lines ---------------------------------------------------------

// refLineSeq is an independent reading of format §4's seq prefix: 1 to 20
// ASCII digits before the first space, fitting in a uint64.
func refLineSeq(line []byte) (uint64, bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || sp > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range line[:sp] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func FuzzEventLine(f *testing.F) {
	e := state.Event{Seq: 3, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Kind: state.KindPrompt, From: "user:a", Text: "hi"}
	line, err := encodeEvent(nil, &e)
	require.NoError(f, err)
	f.Add(line[:len(line)-1], uint64(3))
	f.Add(line[:len(line)-1], uint64(4))
	f.Add([]byte("18446744073709551615 00000000 {}"), uint64(math.MaxUint64))
	f.Add([]byte("18446744073709551616 x"), uint64(0))
	f.Add([]byte("007 x"), uint64(7))
	f.Add([]byte(" 1"), uint64(1))
	f.Fuzz(func(t *testing.T, line []byte, want uint64) {
		seq, ok := lineSeq(line)
		rseq, rok := refLineSeq(line)
		require.Equal(t, rok, ok, "lineSeq(%q)", line)
		if ok {
			require.Equal(t, rseq, seq)
		}

		e, bad := decodeEventLine(line, want)
		if bad != "" {
			require.Zero(t, e.Seq)
			return
		}
		// An accepted line holds the wanted seq in both places, a known
		// kind, and a valid frame; its event re-encodes to a line that
		// decodes to the same event.
		require.True(t, ok)
		require.Equal(t, want, seq)
		require.Equal(t, want, e.Seq)
		require.True(t, state.ValidKind(e.Kind))
		_, fbad := unframe(line[bytes.IndexByte(line, ' ')+1:])
		require.Empty(t, fbad)
		re, err := encodeEvent(nil, &e)
		require.NoError(t, err)
		e2, bad := decodeEventLine(re[:len(re)-1], want)
		require.Empty(t, bad)
		requireSameEvent(t, e, e2)
	})
}

func requireSameEvent(t *testing.T, want, got state.Event) {
	t.Helper()
	require.True(t, want.At.Equal(got.At), "at: want %v, got %v", want.At, got.At)
	jsonEquivalent(t, want.Line, got.Line)
	want.At, got.At, want.Line, got.Line = time.Time{}, time.Time{}, nil, nil
	require.Equal(t, want, got)
}

var kinds = []state.EventKind{state.KindLifecycle, state.KindPrompt, state.KindAgent, state.KindMessage, state.KindBreaker, "bogus", ""}

func FuzzEventRoundTrip(f *testing.F) {
	f.Add(uint64(1), byte(1), "", "user:alice", "hello\nworld", uint64(0), []byte(nil), int64(1764460800123456789), int16(0), byte(1))
	f.Add(uint64(42), byte(2), "", "", "", uint64(7), []byte(`{"type": "assistant", "x": "<&>"}`), int64(0), int16(-330), byte(0x20))
	f.Add(uint64(math.MaxUint64), byte(0), "created", "", "\u2028'; DROP TABLE events; --\x00", uint64(math.MaxUint64), []byte(`"plain"`), int64(-1), int16(60), byte(0xff))
	f.Add(uint64(9), byte(5), "", "", "bad kind", uint64(0), []byte(nil), int64(5), int16(0), byte(3))
	f.Add(uint64(9), byte(3), "", "", "\xff", uint64(0), []byte(`{not json`), int64(5), int16(0), byte(3))
	f.Fuzz(func(t *testing.T, seq uint64, kind byte, action, from, text string, bridgeSeq uint64, line []byte, unixNano int64, zoneMin int16, mask byte) {
		mask = nonzero(mask)
		zone := time.FixedZone("z", int(zoneMin%(18*60))*60)
		e := state.Event{
			Seq: seq, At: time.Unix(0, unixNano).In(zone), Kind: kinds[int(kind)%len(kinds)],
			Action: action, From: from, Text: text, BridgeSeq: bridgeSeq, Line: line,
		}
		if err := validateEvent(&e); err != nil {
			var inv *state.InvalidError
			require.ErrorAs(t, err, &inv)
			return
		}
		enc, err := encodeEvent(nil, &e)
		require.NoError(t, err)
		// One line per event, however hostile the text.
		require.Equal(t, 1, bytes.Count(enc, []byte("\n")))
		require.Equal(t, byte('\n'), enc[len(enc)-1])
		body := enc[:len(enc)-1]
		require.True(t, bytes.HasPrefix(body, []byte(strconv.FormatUint(seq, 10)+" ")))

		got, bad := decodeEventLine(body, seq)
		require.Empty(t, bad)
		requireSameEvent(t, e, got)

		_, bad = decodeEventLine(body, seq+1)
		require.NotEmpty(t, bad, "a line must not be accepted for another seq")

		// Any single damaged byte is detected (the checksum field starts
		// after the seq prefix and its space).
		crcAt := bytes.IndexByte(body, ' ') + 1
		for _, i := range flipPositions(len(body)) {
			_, bad := decodeEventLine(flipped(body, i, mask), seq)
			if i >= crcAt && caseOnlyFlip(body[crcAt:], i-crcAt, mask) {
				require.Empty(t, bad)
				continue
			}
			require.NotEmpty(t, bad, "flip %#x at %d of %q went undetected", mask, i, body)
		}
	})
}

// --- commit log ----------------------------------------------------------

// fuzzRow builds a row exercising every field, with UTC times so that it
// compares equal after a JSON round trip.
func fuzzRow(id, text string, i int) *row {
	at := time.Unix(1764460800+int64(i), int64(i)*7).UTC()
	return &row{
		Spore: state.Spore{
			Wish:   state.Wish{ID: id, Colony: "c", Rank: state.RankSwarm, Swarm: "s", Role: "r", Desired: state.Running, Spec: state.Spec{Image: text, CPU: "2", Memory: "3Gi"}, Created: at, Updated: at.Add(time.Second), Generation: uint64(i) * 3},
			Status: state.Status{ObservedGeneration: uint64(i) * 2, HealthRecord: state.HealthRecord{Restarts: i, Failures: []time.Time{at}, NotBefore: at.Add(time.Minute), BreakerOpen: i%2 == 0, Health: []state.Health{"", "Dead", "Healthy"}[i%3], HealthReason: []string{"", "OOMKilled"}[i%2]}, IngestRecord: state.IngestRecord{BridgeSeq: uint64(i)}},
		},
		Log:    logHead{File: id + ".1.log", Size: int64(i) * 100, LastSeq: uint64(i)},
		Outbox: []state.OutboxEntry{{ID: "m" + strconv.Itoa(i), Spore: id, From: "user:x", Text: text, At: at, Wake: i%3 == 0}},
		Token:  state.HashToken(text),
	}
}

// cleanText keeps fuzz strings to what JSON carries unchanged.
func cleanText(s string) string { return strings.ToValidUTF8(s, "?") }

// fuzzID turns a fuzz string into a valid spore id (rows with other ids
// are refused as they are decoded), short enough for a suffix.
func fuzzID(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
	}
	id := b.String()
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = "x" + id
	}
	if len(id) > 50 {
		id = id[:50]
	}
	if strings.HasSuffix(id, "-") {
		id += "0"
	}
	return id
}

func fuzzRecords(n int, afterTx uint64, id, text string) []*txRecord {
	id, text = fuzzID(id), cleanText(text)
	recs := make([]*txRecord, n)
	for i := range recs {
		// Consecutive, as format 3 wants them.
		rec := &txRecord{TxID: afterTx + 1 + uint64(i), At: nowString(time.Unix(int64(i), 0))}
		switch i % 4 {
		case 0:
			rec.Rows = map[string]*row{id: fuzzRow(id, text, i), id + "-b": fuzzRow(id+"-b", text, i+1)}
		case 1:
			rec.Rows = map[string]*row{id: nil}
		case 2:
			rec.Settings = &state.Settings{Runtime: "local", Image: text, DefaultSpec: state.Spec{CPU: "1"},
				Recovery: state.RecoveryPolicy{BackoffInitial: state.Duration(time.Duration(i) * time.Second), BreakerFailures: i}}
		case 3:
			rec.Settings = &state.Settings{Runtime: "kube", Namespace: "n"}
			rec.Rows = map[string]*row{id + "-c": fuzzRow(id+"-c", text, i)}
		}
		recs[i] = rec
	}
	return recs
}

func encodeTxlog(t testing.TB, recs []*txRecord) []byte {
	return encodeTxlogIn(t, recs, formatVersion)
}

// encodeTxlogIn renders recs as a commit log of the given format: rows of
// formats before splitFormat hold the flat "spore" record, as the format-4
// code wrote them.
func encodeTxlogIn(t testing.TB, recs []*txRecord, format int) []byte {
	var data []byte
	for _, r := range recs {
		if format >= splitFormat {
			b, err := encodeTxRecord(r)
			require.NoError(t, err)
			data = append(data, b...)
			continue
		}
		old := txRecordJSON{TxID: r.TxID, At: r.At, Settings: r.Settings}
		if r.Rows != nil {
			old.Rows = map[string]*rowJSON{}
		}
		for id, row := range r.Rows {
			old.Rows[id] = flatRow(row)
		}
		b, err := json.Marshal(old)
		require.NoError(t, err)
		data = appendFrame(data, b)
	}
	return data
}

// flatRow is r as formats 1 to 4 wrote it (nil for nil).
func flatRow(r *row) *rowJSON {
	if r == nil {
		return nil
	}
	return &rowJSON{Spore: &r.Spore, Log: r.Log, Outbox: r.Outbox, Token: r.Token}
}

// fuzzFormat maps a fuzz byte to a format this binary reads, oldest to
// newest.
func fuzzFormat(b byte) int { return oldestFormat + int(b)%(formatVersion-oldestFormat+1) }

func requireRecords(t *testing.T, want, got []*txRecord) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	require.Equal(t, want, got)
}

func FuzzParseTxlog(f *testing.F) {
	cur := byte(formatVersion - oldestFormat)
	data := encodeTxlog(f, fuzzRecords(3, 0, "a", "t"))
	flat := encodeTxlogIn(f, fuzzRecords(3, 0, "a", "t"), 4)
	f.Add(data, uint64(0), uint16(1), cur)
	f.Add(data, uint64(2), uint16(1), cur)
	f.Add(data[:len(data)-5], uint64(0), uint16(4), cur)
	f.Add(append(bytes.Clone(data), "garbage"...), uint64(0), uint16(1), cur)
	f.Add(append([]byte("garbage\n"), data...), uint64(0), uint16(1), cur)
	f.Add([]byte("\n"), uint64(0), uint16(1), cur)
	f.Add(encodeTxlog(f, fuzzRecords(3, 0, "a", "t")[1:]), uint64(0), uint16(1), cur)
	// Records of formats 1 to 4, and each form in the other's log.
	f.Add(flat, uint64(0), uint16(1), byte(4-oldestFormat))
	f.Add(encodeTxlogIn(f, fuzzRecords(3, 0, "a", "t")[1:], 2), uint64(0), uint16(1), byte(2-oldestFormat))
	f.Add(flat, uint64(0), uint16(1), cur)
	f.Add(data, uint64(0), uint16(1), byte(4-oldestFormat))
	f.Fuzz(func(t *testing.T, data []byte, afterTx uint64, firstLine uint16, fb byte) {
		first := int(firstLine)%1000 + 1
		// From format 3 on transaction ids are consecutive; from format 5
		// rows hold the wish and the status apart.
		format := fuzzFormat(fb)
		const name = "txlog.7"
		sc, err := parseTxlog(name, data, afterTx, first, format)
		if err != nil {
			require.Nil(t, sc)
			ce := requireCorrupt(t, err, name)
			require.GreaterOrEqual(t, ce.Line, first)
			// Corruption is a complete (LF-terminated) line that is bad.
			lines := bytes.SplitAfter(data, []byte("\n"))
			k := ce.Line - first // index of the bad line
			require.Less(t, k, len(lines))
			require.True(t, bytes.HasSuffix(lines[k], []byte("\n")), "a line without its LF was called corrupt, not torn")
			return
		}
		require.GreaterOrEqual(t, sc.good, int64(0))
		require.LessOrEqual(t, sc.good, int64(len(data)))
		good, tail := data[:sc.good], data[sc.good:]
		if len(good) > 0 {
			require.Equal(t, byte('\n'), good[len(good)-1])
		}
		require.Equal(t, bytes.Count(good, []byte("\n")), sc.lines)
		require.Len(t, sc.records, sc.lines)
		if sc.torn == "" {
			require.Empty(t, tail)
		} else {
			// A torn tail is bytes after the last LF, never a whole line.
			require.NotEmpty(t, tail)
			require.Equal(t, -1, bytes.IndexByte(tail, '\n'), "torn tail %q holds a complete line", tail)
			require.Contains(t, sc.torn, "line "+strconv.Itoa(first+sc.lines))
		}
		last := afterTx
		for _, r := range sc.records {
			require.Greater(t, r.TxID, last)
			if format >= headedFormat {
				require.Equal(t, last+1, r.TxID)
			}
			last = r.TxID
			for id, row := range r.Rows {
				require.NoError(t, state.ValidateID(id))
				if row != nil {
					require.Equal(t, id, row.Spore.ID)
					lid, tx, ok := parseLogName(row.Log.File)
					require.True(t, ok && lid == id && tx <= r.TxID, "row %s names log %q", id, row.Log.File)
				}
			}
		}
		// What was accepted re-encodes, in its format, to a log that
		// parses the same.
		re := encodeTxlogIn(t, sc.records, format)
		sc2, err := parseTxlog(name, re, afterTx, first, format)
		require.NoError(t, err)
		require.Empty(t, sc2.torn)
		require.Equal(t, re, encodeTxlogIn(t, sc2.records, format))
		// Rows have one form per format: the same records in the form of
		// the other side of format 5 are corruption at the first line
		// with a row.
		other := formatVersion
		if format >= splitFormat {
			other = splitFormat - 1
		}
		if k := firstWithRow(sc.records); k >= 0 {
			_, err := parseTxlog(name, encodeTxlogIn(t, sc.records, other), afterTx, first, format)
			ce := requireCorrupt(t, err, name)
			require.Equal(t, first+k, ce.Line)
		}
	})
}

// firstWithRow is the index of the first record that holds a row (not a
// deletion), or -1.
func firstWithRow(recs []*txRecord) int {
	for k, r := range recs {
		for _, row := range r.Rows {
			if row != nil {
				return k
			}
		}
	}
	return -1
}

func FuzzTxlogRoundTrip(f *testing.F) {
	f.Add(byte(4), uint64(0), "alpha", "text", uint16(100), uint16(50), byte(1))
	f.Add(byte(1), uint64(41), "x", "", uint16(0), uint16(0), byte(0x20))
	f.Add(byte(7), uint64(math.MaxUint64-5), "\xffid", "\n\"\\", uint16(65535), uint16(9), byte(0x0a))
	f.Fuzz(func(t *testing.T, n byte, afterTx uint64, id, text string, cut, flipAt uint16, mask byte) {
		mask = nonzero(mask)
		afterTx = min(afterTx, math.MaxUint64-64)
		if id == "" {
			id = "x"
		}
		recs := fuzzRecords(int(n)%8+1, afterTx, id, text)
		const name = "txlog.3"
		var ends []int // end offset of each record's line
		var data []byte
		for _, r := range recs {
			b, err := encodeTxRecord(r)
			require.NoError(t, err)
			require.Equal(t, 1, bytes.Count(b, []byte("\n")))
			data = append(data, b...)
			ends = append(ends, len(data))
		}

		sc, err := parseTxlog(name, data, afterTx, 1, formatVersion)
		require.NoError(t, err)
		require.Empty(t, sc.torn)
		require.Equal(t, int64(len(data)), sc.good)
		require.Equal(t, recs, sc.records)

		// The format-4 form reads back the same from a format-4 log (the
		// upgrade reads it), and neither form from the other's log.
		flat := encodeTxlogIn(t, recs, splitFormat-1)
		sc, err = parseTxlog(name, flat, afterTx, 1, splitFormat-1)
		require.NoError(t, err)
		require.Equal(t, recs, sc.records)
		for _, c := range []struct {
			data   []byte
			format int
		}{{flat, formatVersion}, {data, splitFormat - 1}} {
			_, err = parseTxlog(name, c.data, afterTx, 1, c.format)
			ce := requireCorrupt(t, err, name)
			require.Equal(t, 1, ce.Line, "the first record holds rows")
		}

		// A log cut anywhere (a crash mid-append) is never an error: the
		// whole records before the cut, and a torn tail unless the cut is
		// at a line end.
		c := int(cut) % (len(data) + 1)
		sc, err = parseTxlog(name, data[:c], afterTx, 1, formatVersion)
		require.NoError(t, err)
		whole := 0
		for whole < len(ends) && ends[whole] <= c {
			whole++
		}
		requireRecords(t, recs[:whole], sc.records)
		atEnd := c == 0 || data[c-1] == '\n'
		require.Equal(t, !atEnd, sc.torn != "", "cut at %d: torn=%q", c, sc.torn)

		// One damaged byte: corruption at its line, unless it is the final
		// LF (then the last line has no end: a torn tail).
		i := int(flipAt) % len(data)
		d := flipped(data, i, mask)
		k := lineOf(data, i)
		lineStart := 0
		if k > 1 {
			lineStart = ends[k-2]
		}
		sc, err = parseTxlog(name, d, afterTx, 1, formatVersion)
		switch {
		case caseOnlyFlip(data[lineStart:], i-lineStart, mask):
			require.NoError(t, err)
			require.Equal(t, recs, sc.records)
		case d[i] == '\n':
			// A new LF splits line k; its first half fails its checksum
			// and has lines after it.
			ce := requireCorrupt(t, err, name)
			require.Equal(t, k, ce.Line, "flip at byte %d", i)
		case i == len(data)-1:
			// The final LF: the last line loses its end.
			require.NoError(t, err)
			require.NotEmpty(t, sc.torn)
			requireRecords(t, recs[:k-1], sc.records)
		default:
			ce := requireCorrupt(t, err, name)
			require.Equal(t, k, ce.Line, "flip at byte %d", i)
		}
	})
}

// --- commit log header -----------------------------------------------------

// FuzzLogHeader: a header slot round-trips, fits its fixed size for any
// values, and any single damaged byte of it is detected.
func FuzzLogHeader(f *testing.F) {
	f.Add(uint64(7), uint64(1041), uint64(3), int64(4096), uint16(40), byte(1))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(0), int64(math.MaxInt64), uint16(127), byte(0x20))
	f.Fuzz(func(t *testing.T, gen, base, n uint64, end int64, flipAt uint16, mask byte) {
		mask = nonzero(mask)
		h := logHeader{Log: gen, Base: base, TX: base + min(n, math.MaxUint64-base), End: end}
		b := encodeSlot(h)
		require.Len(t, b, slotSize)
		got, bad := decodeSlot(b)
		require.Empty(t, bad)
		require.Equal(t, h, got)
		_, bad = decodeSlot(flipped(b, int(flipAt)%slotSize, mask))
		require.NotEmpty(t, bad, "flip at %d went undetected", int(flipAt)%slotSize)
	})
}

// --- snapshot ------------------------------------------------------------

// decodeWhole is decodeSnapshot with every row decoded, as check reads
// it: a row that does not decode is the snapshot's corruption.
func decodeWhole(name string, data []byte) (*model, error) {
	return decodeWholeFrom(name, data, formatVersion)
}

func decodeWholeFrom(name string, data []byte, oldest int) (*model, error) {
	c, err := decodeSnapshotFrom(name, data, oldest)
	if err != nil {
		return nil, err
	}
	m := newModel(fullRows(c))
	if err := m.decodeAll(); err != nil {
		return nil, err
	}
	// As check reads it: the first line that does not decode.
	var first *lazyRow
	for _, l := range c.lazy {
		if l.err != nil && (first == nil || l.line < first.line) {
			first = l
		}
	}
	if first != nil {
		return nil, first.err
	}
	return m, nil
}

// rowsOf is every row of m, decoded (decodeAll ran).
func rowsOf(m *model) map[string]*row {
	out := map[string]*row{}
	for _, id := range idsOf(m) {
		r, _, err := m.get(id)
		if err != nil {
			panic(err)
		}
		out[id] = r
	}
	return out
}

// idsOf is m.ids() of a model that reads without error.
func idsOf(m *model) []string {
	ids, err := m.ids()
	if err != nil {
		panic(err)
	}
	return ids
}

func fuzzModel(gen, txid uint64, n int, id, text, runtime string) *model {
	id, text = fuzzID(id), cleanText(text)
	txid = max(txid, 1) // rows name the log of transaction 1
	m := &model{gen: gen, format: formatVersion, base: txid, txid: txid, settings: state.Settings{Runtime: cleanText(runtime), Image: text,
		Recovery: state.RecoveryPolicy{HealthyAfter: state.Duration(time.Duration(txid) * time.Millisecond)}}, rows: map[string]*row{}}
	for i := range n {
		rid := id + "-" + strconv.Itoa(i)
		m.rows[rid] = fuzzRow(rid, text, i)
	}
	return m
}

func requireSameModel(t *testing.T, want, got *model) {
	t.Helper()
	require.Equal(t, want.gen, got.gen)
	require.Equal(t, want.txid, got.txid)
	require.Equal(t, want.settings, got.settings)
	require.Equal(t, rowsOf(want), rowsOf(got))
}

// encodeFlatSnapshot renders m as a snapshot whose header says format and
// whose rows hold the flat "spore" record, as the format-4 code (and
// older) wrote them.
func encodeFlatSnapshot(t testing.TB, m *model, format int) []byte {
	h, err := json.Marshal(snapHeader{Format: format, Gen: m.gen, TxID: m.txid, Rows: len(idsOf(m)), Settings: m.settings})
	require.NoError(t, err)
	buf := appendFrame(nil, h)
	for _, id := range idsOf(m) {
		b, err := json.Marshal(flatRow(rowsOf(m)[id]))
		require.NoError(t, err)
		buf = appendFrame(buf, b)
	}
	return buf
}

func FuzzDecodeSnapshot(f *testing.F) {
	good, err := encodeSnapshot(fuzzModel(2, 9, 2, "a", "t", "local"))
	require.NoError(f, err)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add(appendFrame(nil, []byte(`{"format":2,"gen":1,"tx":0,"rows":0,"settings":{"runtime":"x","default_spec":{}}}`)))
	f.Add(appendFrame(nil, []byte(`{"format":1,"gen":1,"tx":0,"rows":1,"settings":{"runtime":"x","default_spec":{}}}`)))
	// The format-4 form, in a snapshot of format 4 and of format 5.
	f.Add(encodeFlatSnapshot(f, fuzzModel(2, 9, 2, "a", "t", "local"), 4))
	f.Add(encodeFlatSnapshot(f, fuzzModel(2, 9, 2, "a", "t", "local"), formatVersion))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "state.json"
		// What the upgrade reads: a snapshot of any format this binary
		// knows, each with its rows' form.
		old, oldErr := decodeWholeFrom(name, data, oldestFormat)
		m, err := decodeWhole(name, data)
		if oldErr == nil {
			require.GreaterOrEqual(t, old.format, oldestFormat)
			require.LessOrEqual(t, old.format, formatVersion)
			for id, r := range rowsOf(old) {
				require.Equal(t, id, r.Spore.ID)
			}
			// The upgrade writes it in this format, which reads the same.
			re, reErr := encodeSnapshot(old)
			require.NoError(t, reErr)
			m2, reErr := decodeWhole(name, re)
			require.NoError(t, reErr)
			requireSameModel(t, old, m2)
			if old.format == formatVersion {
				require.NoError(t, err, "decodeSnapshot refused a current snapshot the upgrade accepts")
				requireSameModel(t, old, m)
			}
		}
		if err != nil {
			require.Nil(t, m)
			var ie *state.IncompatibleError
			if errors.As(err, &ie) {
				require.Equal(t, name, ie.Where)
				require.NotEqual(t, formatVersion, ie.Found)
				if oldErr == nil {
					require.Equal(t, old.format, ie.Found)
				}
				return
			}
			require.Error(t, oldErr, "decodeSnapshot refused as damage what the upgrade accepts")
			ce := requireCorrupt(t, err, name)
			nlines := bytes.Count(data, []byte("\n"))
			if len(data) > 0 && data[len(data)-1] != '\n' {
				nlines++
			}
			require.GreaterOrEqual(t, ce.Line, 1)
			require.LessOrEqual(t, ce.Line, max(1, nlines))
			return
		}
		// Accepted: whole lines, a header, one row per further line, each
		// keyed by its spore; it re-encodes to a snapshot that decodes the same.
		require.Equal(t, byte('\n'), data[len(data)-1])
		require.Equal(t, bytes.Count(data, []byte("\n"))-1, len(idsOf(m)))
		for id, r := range rowsOf(m) {
			require.Equal(t, id, r.Spore.ID)
		}
		re, err := encodeSnapshot(m)
		require.NoError(t, err)
		m2, err := decodeWhole(name, re)
		require.NoError(t, err)
		requireSameModel(t, m, m2)
	})
}

func FuzzSnapshotRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint64(0), byte(0), "", "", "local", uint16(3), byte(1))
	f.Add(uint64(7), uint64(1234), byte(3), "spore", "image:latest", "kube", uint16(300), byte(0x20))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), byte(9), "\xff", "\n\t\"", "\x00", uint16(65535), byte(0x0a))
	f.Fuzz(func(t *testing.T, gen, txid uint64, n byte, id, text, runtime string, flipAt uint16, mask byte) {
		mask = nonzero(mask)
		const name = "state.json"
		m := fuzzModel(gen, txid, int(n)%10, id, text, runtime)
		data, err := encodeSnapshot(m)
		require.NoError(t, err)
		require.Equal(t, len(idsOf(m))+1, bytes.Count(data, []byte("\n")))
		got, err := decodeWhole(name, data)
		require.NoError(t, err)
		requireSameModel(t, m, got)

		// The same rows as the format-4 code wrote them read back the
		// same in a format-4 snapshot (as the upgrade reads it), and are
		// damage in a format-5 one.
		got, err = decodeWholeFrom(name, encodeFlatSnapshot(t, m, splitFormat-1), oldestFormat)
		require.NoError(t, err)
		requireSameModel(t, m, got)
		_, err = decodeWholeFrom(name, encodeFlatSnapshot(t, m, formatVersion), oldestFormat)
		if len(idsOf(m)) > 0 {
			ce := requireCorrupt(t, err, name)
			require.Equal(t, 2, ce.Line)
			require.Contains(t, ce.Reason, `"spore"`)
		} else {
			require.NoError(t, err)
		}

		// One damaged byte is always reported at its line.
		i := int(flipAt) % len(data)
		k := lineOf(data, i)
		lineStart := bytes.LastIndexByte(data[:i], '\n') + 1
		got, err = decodeWhole(name, flipped(data, i, mask))
		if caseOnlyFlip(data[lineStart:], i-lineStart, mask) {
			require.NoError(t, err)
			requireSameModel(t, m, got)
			return
		}
		ce := requireCorrupt(t, err, name)
		require.Equal(t, k, ce.Line, "flip %#x at byte %d", mask, i)

		// A snapshot cut short is damage (it is only ever replaced whole).
		c := int(flipAt) % len(data)
		_, err = decodeWhole(name, data[:c])
		requireCorrupt(t, err, name)
	})
}

// --- FORMAT --------------------------------------------------------------

func FuzzParseFormat(f *testing.F) {
	f.Add(formatBytes(), formatVersion)
	f.Add([]byte("sporectl store\nformat 1\n"), 1)
	f.Add([]byte("sporectl store\nformat 99\n"), 99)
	f.Add([]byte("sporectl store\nformat 1"), 0)
	f.Add([]byte("sporectl store\nformat 1\n\n\nx"), -3)
	f.Add([]byte("garbage"), math.MaxInt)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		v, err := parseFormat(data)
		if err != nil {
			ce := requireCorrupt(t, err, formatFile)
			require.GreaterOrEqual(t, ce.Line, 1)
			require.LessOrEqual(t, ce.Line, bytes.Count(data, []byte("\n"))+1)
		} else {
			// Accepted: the magic line, "format N", then only empty lines.
			require.GreaterOrEqual(t, v, 1)
			lines := strings.Split(string(data), "\n")
			require.GreaterOrEqual(t, len(lines), 2)
			require.Equal(t, formatMagic, lines[0])
			num, ok := strings.CutPrefix(lines[1], "format ")
			require.True(t, ok)
			got, err := strconv.Atoi(num)
			require.NoError(t, err)
			require.Equal(t, v, got)
			require.Empty(t, strings.Join(lines[2:], ""))
		}

		// Every positive version round-trips; others are refused.
		v, err = parseFormat([]byte(formatMagic + "\nformat " + strconv.Itoa(n) + "\n"))
		if n >= 1 {
			require.NoError(t, err)
			require.Equal(t, n, v)
		} else {
			ce := requireCorrupt(t, err, formatFile)
			require.Equal(t, 2, ce.Line)
		}
	})
}

// --- reading an event log ------------------------------------------------

// buildEventLog encodes n events whose sizes vary with textLen, so that
// large n crosses seekLinear and exercises the bisection.
func buildEventLog(t testing.TB, n, textLen int) ([]byte, []state.Event) {
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var buf []byte
	evs := make([]state.Event, n)
	for i := range evs {
		e := state.Event{
			Seq: uint64(i + 1), At: at.Add(time.Duration(i) * time.Millisecond), Kind: kinds[i%5],
			Text: strings.Repeat(string(rune('a'+i%26)), textLen*(i%7+1)%300), BridgeSeq: uint64(i),
		}
		if i%5 == 2 {
			e.Line = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		}
		var err error
		buf, err = encodeEvent(buf, &e)
		require.NoError(t, err)
		evs[i] = e
	}
	return buf, evs
}

func FuzzReadEvents(f *testing.F) {
	f.Add(uint16(10), byte(5), uint64(0), int16(0), uint32(0), byte(0), []byte(nil))
	f.Add(uint16(2000), byte(120), uint64(1500), int16(10), uint32(0), byte(0), []byte("12 torn"))
	f.Add(uint16(2000), byte(120), uint64(1000), int16(0), uint32(150000), byte(0x10), []byte(nil))
	f.Add(uint16(800), byte(255), uint64(799), int16(-1), uint32(7), byte('\n'^'1'), []byte("\n"))
	f.Fuzz(func(t *testing.T, n uint16, textLen byte, after uint64, limit int16, flipAt uint32, mask byte, junk []byte) {
		data, evs := buildEventLog(t, int(n)%3000+1, int(textLen))
		// starts[k] is where the line of seq k+1 begins; starts[len] = size.
		starts := []int{0}
		for k, c := range data {
			if c == '\n' {
				starts = append(starts, k+1)
			}
		}
		require.Len(t, starts, len(evs)+1)
		head := logHead{File: "s.1.log", Size: int64(len(data)), LastSeq: uint64(len(evs))}
		after %= head.LastSeq + 2
		i := int(flipAt) % len(data)
		orig := data
		if mask != 0 {
			data = flipped(data, i, mask)
		}
		// Bytes past the committed size (a transaction that never
		// committed) are never read.
		p := filepath.Join(t.TempDir(), head.File)
		require.NoError(t, os.WriteFile(p, append(bytes.Clone(data), junk...), 0o600))

		const name = "events/s.1.log"
		got, err := readEvents(p, name, head, after, int(limit))

		var want []state.Event
		if after < head.LastSeq {
			want = evs[after:]
			if limit > 0 && int(limit) < len(want) {
				want = want[:limit]
			}
		}
		if err != nil {
			// Only damage may make a read fail, and it names a line of the
			// window that was asked for.
			require.NotZero(t, mask, "undamaged log: %v", err)
			ce := requireCorrupt(t, err, name)
			require.Greater(t, ce.Line, int(after))
			require.LessOrEqual(t, ce.Line, int(after)+len(want))
			return
		}
		// Never wrong data: exactly what was written...
		require.Len(t, got, len(want))
		for k := range want {
			requireSameEvent(t, want[k], got[k])
		}
		// ...and damage to the lines returned is always caught. The LF
		// ending line `after` counts: flipping it joins that line to the
		// window's first.
		if mask != 0 && len(want) > 0 {
			from, to := starts[after], starts[int(after)+len(want)]
			if after > 0 {
				from--
			}
			lineStart := starts[lineOf(orig, i)-1]
			if i >= from && i < to && !caseOnlyFlipEvent(orig[lineStart:], i-lineStart, mask) {
				t.Fatalf("flip %#x at byte %d (window bytes %d..%d) went undetected", mask, i, from, to)
			}
		}
	})
}

// caseOnlyFlipEvent is caseOnlyFlip for a line with a seq prefix.
func caseOnlyFlipEvent(line []byte, i int, mask byte) bool {
	sp := bytes.IndexByte(line, ' ')
	return sp >= 0 && i > sp && caseOnlyFlip(line[sp+1:], i-sp-1, mask)
}

// --- seed corpus ---------------------------------------------------------

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz seeds from the encoders")

// corpusFile renders values in the `go test fuzz v1` format.
func corpusFile(vals ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		case uint16:
			fmt.Fprintf(&b, "uint16(%d)\n", v)
		case uint32:
			fmt.Fprintf(&b, "uint32(%d)\n", v)
		case uint64:
			fmt.Fprintf(&b, "uint64(%d)\n", v)
		case int16:
			fmt.Fprintf(&b, "int16(%d)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		default:
			panic(fmt.Sprintf("corpusFile: type %T", v))
		}
	}
	return []byte(b.String())
}

// fuzzSeeds are corpus files built from real encoder output.
func fuzzSeeds(t testing.TB) map[string][]byte {
	log := encodeTxlog(t, fuzzRecords(5, 10, "spore", "text"))
	flatLog := encodeTxlogIn(t, fuzzRecords(5, 10, "spore", "text"), 4)
	snap, err := encodeSnapshot(fuzzModel(3, 17, 3, "spore", "img", "local"))
	require.NoError(t, err)
	flatSnap := encodeFlatSnapshot(t, fuzzModel(3, 17, 3, "spore", "img", "local"), 4)
	cur := byte(formatVersion - oldestFormat)
	evlog, _ := buildEventLog(t, 40, 9)
	ev := state.Event{Seq: 12, At: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC), Kind: state.KindAgent, BridgeSeq: 5, Line: json.RawMessage(`{"type":"assistant"}`)}
	evLine, err := encodeEvent(nil, &ev)
	require.NoError(t, err)
	firstLine := log[:bytes.IndexByte(log, '\n')]
	return map[string][]byte{
		"FuzzUnframe/encoded-record":          corpusFile(firstLine, byte(0x20), uint16(40)),
		"FuzzUnframe/snapshot-header":         corpusFile(snap[:bytes.IndexByte(snap, '\n')], byte(0x01), uint16(8)),
		"FuzzEventLine/encoded-agent":         corpusFile(evLine[:len(evLine)-1], uint64(12)),
		"FuzzEventLine/encoded-wrong-seq":     corpusFile(evLine[:len(evLine)-1], uint64(13)),
		"FuzzEventRoundTrip/agent-line":       corpusFile(uint64(12), byte(2), "", "", "", uint64(5), []byte(`{"type":"assistant","text":"<b>"}`), int64(1764464523000000004), int16(0), byte(0x40)),
		"FuzzParseTxlog/five-records":         corpusFile(log, uint64(10), uint16(1), cur),
		"FuzzParseTxlog/torn-tail":            corpusFile(log[:len(log)-20], uint64(10), uint16(6), cur),
		"FuzzParseTxlog/middle-damage":        corpusFile(flipped(log, len(log)/2, 0x01), uint64(10), uint16(1), cur),
		"FuzzParseTxlog/format4-records":      corpusFile(flatLog, uint64(10), uint16(3), byte(4-oldestFormat)),
		"FuzzParseTxlog/format4-in-format5":   corpusFile(flatLog, uint64(10), uint16(3), cur),
		"FuzzTxlogRoundTrip/five":             corpusFile(byte(5), uint64(10), "spore", "text", uint16(700), uint16(300), byte(0x02)),
		"FuzzDecodeSnapshot/three-rows":       corpusFile(snap),
		"FuzzDecodeSnapshot/damaged-row":      corpusFile(flipped(snap, len(snap)-30, 0x04)),
		"FuzzDecodeSnapshot/format4-rows":     corpusFile(flatSnap),
		"FuzzSnapshotRoundTrip/three-rows":    corpusFile(uint64(3), uint64(17), byte(3), "spore", "img", "local", uint16(500), byte(0x08)),
		"FuzzParseFormat/current":             corpusFile(formatBytes(), int(formatVersion)),
		"FuzzParseFormat/newer":               corpusFile([]byte(formatMagic+"\nformat 99\n"), 99),
		"FuzzParseFormat/older":               corpusFile([]byte(formatMagic+"\nformat 1\n"), 1),
		"FuzzReadEvents/bisect-with-damage":   corpusFile(uint16(2500), byte(200), uint64(1700), int16(25), uint32(400000), byte(0x01), []byte("1 torn")),
		"FuzzReadEvents/small-log":            corpusFile(uint16(40), byte(9), uint64(3), int16(5), uint32(0), byte(0), []byte(nil)),
		"FuzzReadEvents/damage-before-window": corpusFile(uint16(40), byte(9), uint64(30), int16(0), uint32(uint32(len(evlog)/4)), byte(0x10), []byte(nil)),
	}
}

// TestFuzzSeedCorpus keeps testdata/fuzz in step with the encoders: the
// seeds are real encoder output, so a format change must regenerate them
// (go test -run TestFuzzSeedCorpus -update-fuzz-seeds ./state/dirstore).
func TestFuzzSeedCorpus(t *testing.T) {
	for name, want := range fuzzSeeds(t) {
		p := filepath.Join("testdata", "fuzz", filepath.FromSlash(name))
		if *updateFuzzSeeds {
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, want, 0o644))
			continue
		}
		got, err := os.ReadFile(p)
		require.NoError(t, err, "missing seed; run with -update-fuzz-seeds")
		require.Equal(t, string(want), string(got), "stale seed %s; run with -update-fuzz-seeds", name)
	}
}

// TestReadEventsEveryWindow reads a log several times seekLinear long from
// every position: the bisection must never start past the wanted line,
// whichever line it probes.
func TestReadEventsEveryWindow(t *testing.T) {
	data, evs := buildEventLog(t, 3000, 200)
	require.Greater(t, len(data), 8*seekLinear)
	p := filepath.Join(t.TempDir(), "s.1.log")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	head := logHead{File: "s.1.log", Size: int64(len(data)), LastSeq: uint64(len(evs))}
	for after := range len(evs) + 1 {
		got, err := readEvents(p, "events/s.1.log", head, uint64(after), 2)
		require.NoError(t, err, "after %d", after)
		want := evs[after:min(after+2, len(evs))]
		require.Len(t, got, len(want), "after %d", after)
		for k := range want {
			requireSameEvent(t, want[k], got[k])
		}
	}
}
