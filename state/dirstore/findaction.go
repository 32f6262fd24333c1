package dirstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
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
	ev, found, err := t.s.actions.findAction(path, name, head, kind, action, since)
	if err != nil {
		return state.Event{}, false, fmt.Errorf("look up %s %q in the log of %s: %w", kind, action, id, err)
	}
	return ev, found, nil
}

// actionCache is a handle's memory of the message ids in the event logs
// FindAction has read: per log, the prompt and message events back to a
// floor, and how far the log was read. The next lookup in that log reads
// only the lines appended since (a long-lived handle, as serve's, reads
// each line once) and looks in memory; a one-command handle pays the read
// back from the end once. The logs are append-only below their committed
// size and a log's file name is never reused (format §4), so what was
// read stays true.
type actionCache struct {
	mu   sync.Mutex
	logs map[string]*logActions // by log file name
}

// maxCachedLogs bounds the logs remembered; past it the cache starts over.
const maxCachedLogs = 4096

// logActions is one log's part of the cache. refs holds every prompt and
// message event of the log's first seq events whose At is at or after
// floor (all of them when floor is zero), ascending.
type logActions struct {
	mu    sync.Mutex
	ok    bool // read at least once
	size  int64
	seq   uint64
	floor time.Time
	refs  []actionRef
}

type actionRef struct {
	seq    uint64
	at     time.Time
	kind   state.EventKind
	action string
}

func (c *actionCache) log(file string) *logActions {
	c.mu.Lock()
	defer c.mu.Unlock()
	if la := c.logs[file]; la != nil {
		return la
	}
	if c.logs == nil || len(c.logs) >= maxCachedLogs {
		c.logs = map[string]*logActions{}
	}
	la := &logActions{}
	c.logs[file] = la
	return la
}

func (c *actionCache) forget(file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.logs, file)
}

// findAction is FindAction over the committed part of one log.
func (c *actionCache) findAction(path, name string, head logHead, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	la := c.log(head.File)
	la.mu.Lock()
	defer la.mu.Unlock()
	ev, found, err := la.find(path, name, head, kind, action, since)
	if err != nil {
		la.ok, la.refs = false, nil
		c.forget(head.File)
	}
	return ev, found, err
}

func (la *logActions) find(path, name string, head logHead, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	if back, on := !la.ok || since.Before(la.floor), head.LastSeq > la.seq; back || on {
		f, err := openFile(path, name, os.O_RDONLY, false)
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted after this reader took its snapshot, as readEvents says.
			return state.Event{}, false, fmt.Errorf("event log %s: %w", name, state.ErrNotFound)
		}
		if err != nil {
			return state.Event{}, false, storeErr("read events", err)
		}
		defer f.Close()
		if back {
			err = la.readBack(f, name, head, since)
		} else {
			err = la.readOn(f, name, head)
		}
		if err != nil {
			return state.Event{}, false, storeErr("read events", err)
		}
	}
	var at uint64
	for i := len(la.refs) - 1; i >= 0; i-- {
		r := la.refs[i]
		if r.seq > head.LastSeq {
			continue // after this reader's snapshot
		}
		if r.at.Before(since) {
			break
		}
		if r.kind == kind && r.action == action {
			at = r.seq
			break
		}
	}
	la.prune(since)
	if at == 0 {
		return state.Event{}, false, nil
	}
	evs, err := readEvents(path, name, head, at-1, 1)
	if err != nil {
		return state.Event{}, false, err
	}
	return evs[0], true, nil
}

// prune forgets the refs older than since: a later lookup that reaches
// further back reads the log again.
func (la *logActions) prune(since time.Time) {
	n := 0
	for n < len(la.refs) && la.refs[n].at.Before(since) {
		n++
	}
	if n > 0 {
		la.refs = slices.Delete(la.refs, 0, n)
	}
	if since.After(la.floor) {
		la.floor = since
	}
}

// readBack reads the log back from its end to the first event older than
// since that is not an agent line (or to its start), decoding only such
// events, and keeps what it found.
func (la *logActions) readBack(f *os.File, name string, head logHead, since time.Time) error {
	var refs []actionRef
	floor := time.Time{}
	want := head.LastSeq
	err := linesBack(f, name, head.Size, func(line []byte) (bool, error) {
		if want == 0 {
			return false, &state.CorruptError{File: name, Line: 1, Offset: -1, Reason: fmt.Sprintf("holds more lines than committed seq %d", head.LastSeq)}
		}
		e, agent, err := nonAgentEvent(line, name, want)
		want--
		if err != nil || agent {
			return err == nil, err
		}
		if e.At.Before(since) {
			// The store's writers stamp events in log order: every
			// earlier one is older still.
			floor = since
			return false, nil
		}
		if e.Kind == state.KindPrompt || e.Kind == state.KindMessage {
			refs = append(refs, actionRef{seq: e.Seq, at: e.At, kind: e.Kind, action: e.Action})
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	slices.Reverse(refs)
	la.ok, la.size, la.seq, la.floor, la.refs = true, head.Size, head.LastSeq, floor, refs
	return nil
}

// readOn reads the lines appended since la was read, up to head.
func (la *logActions) readOn(f *os.File, name string, head logHead) error {
	lr := newLineReader(f, la.size, head.Size)
	next := la.seq + 1
	for next <= head.LastSeq {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return &state.CorruptError{File: name, Line: int(next), Offset: -1, Reason: fmt.Sprintf("log ends before committed seq %d", head.LastSeq)}
			}
			return err
		}
		e, agent, err := nonAgentEvent(line, name, next)
		next++
		if err != nil {
			return err
		}
		if !agent && (e.Kind == state.KindPrompt || e.Kind == state.KindMessage) {
			la.refs = append(la.refs, actionRef{seq: e.Seq, at: e.At, kind: e.Kind, action: e.Action})
		}
	}
	la.size, la.seq = head.Size, head.LastSeq
	return nil
}

// nonAgentEvent decodes the line of log name that must hold seq, unless
// it is an agent line (agent), which is neither decoded nor checked.
func nonAgentEvent(line []byte, name string, seq uint64) (e state.Event, agent bool, err error) {
	if n, ok := lineSeq(line); ok && n == seq && isAgentLine(line) {
		return state.Event{}, true, nil
	}
	e, bad := decodeEventLine(line, seq)
	if bad != "" {
		return state.Event{}, false, &state.CorruptError{File: name, Line: int(seq), Offset: -1, Reason: bad}
	}
	return e, e.Kind == state.KindAgent, nil
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
// must end with a line feed), newest first, without it, until fn says no
// more or returns an error. A line passed to fn is valid only until fn
// returns: the blocks are read into one buffer, reused.
func linesBack(f *os.File, name string, size int64, fn func(line []byte) (bool, error)) error {
	const block = 64 << 10
	pos := size // data holds the bytes [pos, end) of the file, at buf's end
	var buf, data []byte
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
		// The line's start is before pos: read the block before it, into
		// buf ahead of what is left of data (a line longer than a block
		// grows buf).
		k := int(min(int64(block), pos))
		if need := k + len(data); need > len(buf) {
			buf = make([]byte, max(need, 2*len(buf), block))
		}
		rest := buf[len(buf)-len(data):]
		copy(rest, data)
		start := len(buf) - len(data) - k
		if _, err := f.ReadAt(buf[start:start+k], pos-int64(k)); errors.Is(err, io.EOF) {
			return &state.CorruptError{File: name, Line: -1, Offset: -1, Reason: fmt.Sprintf("log is shorter than its committed %d bytes", size)}
		} else if err != nil {
			return err
		}
		data, pos = buf[start:], pos-int64(k)
	}
}
