package dirstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// An event log line is "<seq> <framed event JSON>" (format §4). Line k of
// a log holds seq k, so a seq names its line.

func encodeEvent(dst []byte, e *state.Event) ([]byte, error) {
	// No HTML escaping: an agent's line keeps its '<', '>' and '&' as they
	// came (JSON values are still compacted to one line).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode event %d: %w", e.Seq, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, ' ')
	return appendFrame(dst, b), nil
}

// lineSeq reads the leading seq of a line without decoding the rest.
func lineSeq(line []byte) (uint64, bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || sp > 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(line[:sp]), 10, 64)
	return n, err == nil
}

// decodeEventLine parses one line (without LF) that must hold seq want.
func decodeEventLine(line []byte, want uint64) (state.Event, string) {
	seq, ok := lineSeq(line)
	if !ok {
		return state.Event{}, "line does not start with a sequence number"
	}
	if seq != want {
		return state.Event{}, fmt.Sprintf("holds seq %d where seq %d belongs", seq, want)
	}
	payload, bad := unframe(line[bytes.IndexByte(line, ' ')+1:])
	if bad != "" {
		return state.Event{}, bad
	}
	var e state.Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return state.Event{}, "event: " + err.Error()
	}
	if e.Seq != seq {
		return state.Event{}, fmt.Sprintf("event JSON says seq %d, line prefix says %d", e.Seq, seq)
	}
	if !state.ValidKind(e.Kind) {
		return state.Event{}, fmt.Sprintf("unknown event kind %q", e.Kind)
	}
	return e, ""
}

// validateEvent refuses what the store could not give back exactly.
func validateEvent(e *state.Event) error {
	if !state.ValidKind(e.Kind) {
		return &state.InvalidError{Field: "event kind", Value: string(e.Kind), Reason: "must be one of lifecycle, prompt, agent, message, breaker"}
	}
	for _, f := range []struct{ name, v string }{{"event text", e.Text}, {"event sender", e.From}, {"event action", e.Action}} {
		if !utf8.ValidString(f.v) {
			return &state.InvalidError{Field: f.name, Value: "(binary)", Reason: "is not valid UTF-8"}
		}
	}
	if len(e.Line) > 0 && !json.Valid(e.Line) {
		return &state.InvalidError{Field: "agent line", Value: "(raw)", Reason: "is not valid JSON"}
	}
	return nil
}

const seekLinear = 64 << 10 // below this span, scan instead of bisecting

// seekSeq returns an offset at or before the line holding seq target, so
// that reading from it finds target without reading what precedes it: a
// bisection over byte offsets using each line's leading seq. Its cost
// grows with log2 of the log size, not with the log.
func seekSeq(f *os.File, size int64, target uint64) (int64, error) {
	lo, hi := int64(0), size
	for hi-lo > seekLinear {
		mid := lo + (hi-lo)/2
		start, seq, ok, err := lineStartAfter(f, mid, hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = mid
			continue
		}
		if seq < target {
			lo = start
		} else {
			hi = start
		}
	}
	return lo, nil
}

// lineStartAfter finds the first line that starts at or after pos (pos > 0)
// and before limit, and reads its seq.
func lineStartAfter(f *os.File, pos, limit int64) (int64, uint64, bool, error) {
	var buf [4096]byte
	at := pos - 1
	for at < limit {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), limit-at)], at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			start := at + int64(i) + 1
			if start >= limit {
				return 0, 0, false, nil
			}
			// Usually the line's seq is in the bytes already read.
			rest := buf[i+1 : n]
			if sp := bytes.IndexByte(rest, ' '); sp > 0 && start+int64(sp) < limit {
				seq, ok := lineSeq(rest)
				return start, seq, ok, nil
			}
			var head [24]byte
			k, err := f.ReadAt(head[:min(int64(len(head)), limit-start)], start)
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, 0, false, err
			}
			seq, ok := lineSeq(head[:k])
			if !ok {
				return 0, 0, false, nil
			}
			return start, seq, true, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, false, nil
			}
			return 0, 0, false, err
		}
		at += int64(n)
	}
	return 0, 0, false, nil
}

// lineReader reads LF-terminated lines of any length from a bounded
// section of a file.
type lineReader struct {
	r    *bufio.Reader
	long []byte
}

func newLineReader(f *os.File, off, end int64) *lineReader {
	// Most reads are a page of short lines: a small buffer, grown only by
	// lines longer than it.
	size := int(min(end-off, 16<<10))
	return &lineReader{r: bufio.NewReaderSize(io.NewSectionReader(f, off, end-off), max(size, 16))}
}

// next returns the next line without its LF; io.EOF at the end, and
// io.ErrUnexpectedEOF for bytes without a final LF.
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.r.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for {
			line, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, line...)
			if err == nil {
				return lr.long[:len(lr.long)-1], nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		line = lr.long
	}
	if errors.Is(err, io.EOF) {
		if len(line) == 0 {
			return nil, io.EOF
		}
		return line, io.ErrUnexpectedEOF
	}
	return nil, err
}

// readEvents returns up to limit events with seq > after from the committed
// part of a log (limit <= 0: all). name is used in errors.
func readEvents(path, name string, head logHead, after uint64, limit int) ([]state.Event, error) {
	if after >= head.LastSeq || head.Size == 0 {
		return nil, nil
	}
	f, err := openFile(path, name, os.O_RDONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		// The spore was deleted (its log removed) after this reader took
		// its snapshot: it is gone, as a fresh read would say.
		return nil, fmt.Errorf("event log %s: %w", name, state.ErrNotFound)
	}
	if err != nil {
		return nil, storeErr("read events", err)
	}
	defer f.Close()
	off, err := seekSeq(f, head.Size, after+1)
	if err != nil {
		return nil, ioErr("read events", err)
	}
	want := head.LastSeq - after
	if limit > 0 && uint64(limit) < want {
		want = uint64(limit)
	}
	out := make([]state.Event, 0, min(want, 4096))
	lr := newLineReader(f, off, head.Size)
	next := after + 1
	for uint64(len(out)) < want {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, &state.CorruptError{File: name, Line: int(next), Offset: -1, Reason: fmt.Sprintf("log ends before committed seq %d", head.LastSeq)}
			}
			return nil, ioErr("read events", err)
		}
		seq, ok := lineSeq(line)
		if ok && seq < next {
			continue // before the window; not decoded
		}
		e, bad := decodeEventLine(line, next)
		if bad != "" {
			return nil, &state.CorruptError{File: name, Line: int(next), Offset: -1, Reason: bad}
		}
		out = append(out, e)
		next++
	}
	return out, nil
}
