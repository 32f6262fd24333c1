package eventlog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// IndexEvery is the spacing of the sparse index: a read seeks to the
// nearest indexed record at or before the one it wants and scans at most
// IndexEvery-1 records from there.
const IndexEvery = 512

// ErrClosed is returned by a log after Close.
var ErrClosed = errors.New("event log closed")

// Log is an open event log. Append is for one writer at a time; reads and
// waits may run concurrently with it and with each other.
type Log struct {
	path string

	appendMu sync.Mutex // serialises Append
	// torn: the last Append failed after its bytes may have reached the
	// file past size; guarded by appendMu.
	torn bool

	mu     sync.RWMutex // guards the fields below
	f      *os.File
	size   int64
	last   uint64
	index  []int64 // index[i] is the offset of record i*IndexEvery+1
	notify chan struct{}
	closed bool
}

func (l *Log) note(seq uint64, off int64) {
	if (seq-1)%IndexEvery == 0 {
		l.index = append(l.index, off)
	}
	l.last = seq
}

// Path is the file the log lives in.
func (l *Log) Path() string { return l.path }

// Last is the number of the last durable line, 0 for an empty log.
func (l *Log) Last() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.last
}

// Append numbers lines, writes them in one batch and fsyncs before making
// them visible. Each line must be what Normalize returns. On error nothing
// of the batch is visible and the numbers are not used: a retry writes the
// same numbers over whatever part of the batch reached the file.
func (l *Log) Append(ctx context.Context, at time.Time, lines []json.RawMessage) (first, last uint64, err error) {
	if len(lines) == 0 {
		return 0, 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	f, size, seq, closed := l.f, l.size, l.last, l.closed
	l.mu.RUnlock()
	if closed {
		return 0, 0, ErrClosed
	}
	first = seq + 1
	buf := make([]byte, 0, 64*len(lines)+sumLen(lines))
	offsets := make([]int64, len(lines))
	for i, line := range lines {
		if !json.Valid(line) {
			return 0, 0, fmt.Errorf("append line %d: not JSON", seq+uint64(i)+1)
		}
		offsets[i] = size + int64(len(buf))
		buf = appendRecord(buf, Record{Seq: seq + uint64(i) + 1, At: at, Line: line})
	}
	last = seq + uint64(len(lines))
	if l.torn {
		// A failed batch may have left bytes past the committed end; a
		// retry shorter than them (times vary in length) would leave whole
		// stale lines behind it, which the next open calls corruption.
		if err := f.Truncate(size); err != nil {
			return 0, 0, fmt.Errorf("cut a failed batch off %s: %w", l.path, err)
		}
		l.torn = false
	}
	if _, err := writeAt(f, buf, size); err != nil {
		l.torn = true
		return 0, 0, fmt.Errorf("append lines %d-%d to %s: %w", first, last, l.path, err)
	}
	if err := syncFile(f); err != nil {
		l.torn = true
		return 0, 0, fmt.Errorf("fsync lines %d-%d to %s: %w", first, last, l.path, err)
	}
	l.mu.Lock()
	for i := range lines {
		l.note(first+uint64(i), offsets[i])
	}
	l.size = size + int64(len(buf))
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	return first, last, nil
}

func sumLen(lines []json.RawMessage) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// Wait blocks until a line after after is durable, or ctx ends. It returns
// the last number either way.
func (l *Log) Wait(ctx context.Context, after uint64) (uint64, error) {
	for {
		l.mu.RLock()
		last, ch, closed := l.last, l.notify, l.closed
		l.mu.RUnlock()
		if last > after {
			return last, nil
		}
		if closed {
			return last, ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
}

// Read returns up to limit records numbered after after, stopping early
// once maxBytes of lines are gathered (but always returning at least one
// record when there is one). It returns the last number at the time of the
// read.
func (l *Log) Read(ctx context.Context, after uint64, limit, maxBytes int) ([]Record, uint64, error) {
	l.mu.RLock()
	f, size, last, index, closed := l.f, l.size, l.last, l.index, l.closed
	l.mu.RUnlock()
	if closed {
		return nil, last, ErrClosed
	}
	if after >= last || limit <= 0 {
		return nil, last, nil
	}
	want := after + 1
	slot := int((want - 1) / IndexEvery)
	slot = min(slot, len(index)-1)
	seq := uint64(slot)*IndexEvery + 1
	off := index[slot]
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
	var buf []byte
	var out []Record
	bytesOut := 0
	for seq <= last && len(out) < limit {
		if err := ctx.Err(); err != nil {
			return nil, last, err
		}
		b, err := readLine(br, &buf)
		if err != nil {
			return nil, last, fmt.Errorf("read event log %s at line %d: %w", l.path, seq, err)
		}
		if seq < want {
			seq++
			continue
		}
		rec, err := ParseRecord(b)
		if err != nil {
			return nil, last, fmt.Errorf("read event log %s at line %d: %w", l.path, seq, err)
		}
		if rec.Seq != seq {
			return nil, last, fmt.Errorf("read event log %s: found line %d where %d belongs", l.path, rec.Seq, seq)
		}
		rec.Line = append(json.RawMessage(nil), rec.Line...)
		if len(out) > 0 && bytesOut+len(rec.Line) > maxBytes {
			break
		}
		bytesOut += len(rec.Line)
		out = append(out, rec)
		seq++
	}
	return out, last, nil
}

// Close releases the file; waiters return ErrClosed.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.notify)
	return l.f.Close()
}
