package dirstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/sporectl/sporectl/state"
)

// FindAction reads the spore's log back from its end (the transaction's
// own events first), decoding only the lines that are not agent lines:
// an agent line is recognised by its "kind" key, which follows "seq" and
// "at" in every line this store writes, without checking its checksum
// (nothing of it is used). A busy spore's log is mostly agent lines, so
// what this costs is about reading the bytes written since since, not
// decoding them (format §9).
func (t *tx) FindAction(ctx context.Context, id string, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Event{}, false, err
	}
	if kind != state.KindPrompt && kind != state.KindMessage {
		return state.Event{}, false, &state.InvalidError{Field: "event kind", Value: string(kind), Reason: "FindAction looks up prompt and message ids only"}
	}
	r, err := t.mustGet(id)
	if err != nil {
		return state.Event{}, false, err
	}
	head := r.Log
	if p := t.pending[id]; p != nil {
		head = p.committed
		for i := len(p.events) - 1; i >= 0; i-- {
			e := p.events[i]
			if e.Kind == state.KindAgent {
				continue
			}
			if e.At.Before(since) {
				return state.Event{}, false, nil
			}
			if e.Kind == kind && e.Action == action {
				return e, true, nil
			}
		}
	}
	if head.LastSeq == 0 || head.Size == 0 {
		return state.Event{}, false, nil
	}
	path, name, err := t.s.logPath(id, head.File)
	if err != nil {
		return state.Event{}, false, err
	}
	ev, found, err := findAction(path, name, head, kind, action, since)
	if err != nil {
		return state.Event{}, false, fmt.Errorf("look up %s %q in the log of %s: %w", kind, action, id, err)
	}
	return ev, found, nil
}

// findAction is FindAction over the committed part of one log.
func findAction(path, name string, head logHead, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	f, err := openFile(path, name, os.O_RDONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted after this reader took its snapshot, as readEvents says.
		return state.Event{}, false, fmt.Errorf("event log %s: %w", name, state.ErrNotFound)
	}
	if err != nil {
		return state.Event{}, false, storeErr("read events", err)
	}
	defer f.Close()
	var (
		found bool
		ev    state.Event
		want  = head.LastSeq
	)
	err = linesBack(f, name, head.Size, func(line []byte) (bool, error) {
		if want == 0 {
			return false, &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: fmt.Sprintf("holds more lines than committed seq %d", head.LastSeq)}
		}
		if seq, ok := lineSeq(line); ok && seq == want && isAgentLine(line) {
			want--
			return true, nil
		}
		e, bad := decodeEventLine(line, want)
		if bad != "" {
			return false, &state.CorruptError{File: name, Line: int(want), Offset: -1, Reason: bad}
		}
		want--
		if e.Kind == state.KindAgent {
			return true, nil
		}
		if e.At.Before(since) {
			return false, nil
		}
		if e.Kind == kind && e.Action == action {
			ev, found = e, true
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return state.Event{}, false, storeErr("read events", err)
	}
	return ev, found, nil
}

// agentKind is how every agent line this store writes names its kind,
// right after its "seq" and "at" (encodeEvent writes state.Event's fields
// in order). Inside a JSON string a quote is escaped, so these bytes
// cannot appear there.
var agentKind = []byte(`,"kind":"agent"`)

// isAgentLine says whether a log line (seq, frame, payload) is an agent
// line, from its first bytes alone.
func isAgentLine(line []byte) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return false
	}
	payload := line[sp+1:]
	if len(payload) < crcLen+1 {
		return false
	}
	payload = payload[crcLen+1:]
	// {"seq":<20 digits>,"at":"<35 bytes of RFC 3339 with nanoseconds>", then the kind.
	const before = 96
	return bytes.HasPrefix(payload, []byte(`{"seq":`)) && bytes.Contains(payload[:min(len(payload), before)], agentKind)
}

// linesBack calls fn with each line of the first size bytes of f (which
// must end with an LF; name is f's in errors), from the last to the first, without its LF, until fn
// returns false or an error. It reads backward in blocks, so it reads
// only as far back as fn goes.
func linesBack(f *os.File, name string, size int64, fn func(line []byte) (bool, error)) error {
	const block = 64 << 10
	pos := size // data holds the bytes [pos, end) of the file
	var data []byte
	for {
		if n := len(data); n > 0 {
			if data[n-1] != '\n' {
				return &state.CorruptError{File: name, Line: -1, Offset: pos + int64(n), Reason: "committed log does not end with a line feed"}
			}
			if i := bytes.LastIndexByte(data[:n-1], '\n'); i >= 0 || pos == 0 {
				more, err := fn(data[i+1 : n-1])
				if err != nil || !more {
					return err
				}
				data = data[:i+1]
				continue
			}
		} else if pos == 0 {
			return nil
		}
		// The line's start is before pos: read the block before it.
		k := min(int64(block), pos)
		grown := make([]byte, int(k)+len(data))
		if _, err := f.ReadAt(grown[:k], pos-k); errors.Is(err, io.EOF) {
			return &state.CorruptError{File: name, Line: -1, Offset: -1, Reason: fmt.Sprintf("log is shorter than its committed %d bytes", size)}
		} else if err != nil {
			return err
		}
		copy(grown[k:], data)
		data, pos = grown, pos-k
	}
}
