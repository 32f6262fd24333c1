package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Prompt is one queued prompt.
type Prompt struct {
	ID   string    `json:"id"`
	From string    `json:"from"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
	// Attempts counts the turns started for it; more than zero at startup
	// means a bridge died while it ran.
	Attempts int `json:"attempts,omitempty"`
}

// queueOp is one line of queue.jsonl. Ops: "add" (a prompt), "start" (a
// turn began for id), "done" (id left the queue), "seen" (ids that ran
// long ago, kept so a redelivery stays a no-op after compaction).
type queueOp struct {
	Op     string   `json:"op"`
	Prompt *Prompt  `json:"prompt,omitempty"`
	ID     string   `json:"id,omitempty"`
	IDs    []string `json:"ids,omitempty"`
}

// compactAfter: once this many done ops pile up, the journal is rewritten.
const compactAfter = 1000

// queue is the durable, ordered prompt queue. Every op is fsync'd before
// the call returns, so a 202 means the prompt survives a crash.
type queue struct {
	path string

	mu      sync.Mutex
	f       *os.File
	pending []*Prompt
	done    map[string]bool
	nDone   int // done ops in the journal since the last compaction
	changed chan struct{}
}

func openQueue(ctx context.Context, path string, logger *slog.Logger) (*queue, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	q := &queue{path: path, f: f, done: map[string]bool{}, changed: make(chan struct{})}
	good, err := q.replay(ctx)
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() > good {
		logger.Warn("dropping torn tail of prompt queue", "path", path, "bytes", st.Size()-good)
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("drop torn tail of %s: %w", path, err)
		}
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	return q, nil
}

// replay rebuilds the queue from the journal and returns the offset after
// the last complete op. Only bytes after the last LF may be torn.
func (q *queue) replay(ctx context.Context) (int64, error) {
	br := bufio.NewReader(q.f)
	var off int64
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return off, nil // nothing, or an unfinished last line
		}
		if err != nil {
			return 0, fmt.Errorf("read queue %s: %w", q.path, err)
		}
		var op queueOp
		if err := json.Unmarshal(b, &op); err != nil || !q.apply(op) {
			// A complete line was written whole and fsync'd, and its prompt
			// acknowledged: a bad one is damage, never a torn tail.
			return 0, fmt.Errorf("queue %s line %d: not a queue op", q.path, n)
		}
		off += int64(len(b))
	}
}

// apply applies one op to memory; false for an op that makes no sense.
func (q *queue) apply(op queueOp) bool {
	switch op.Op {
	case "add":
		if op.Prompt == nil || op.Prompt.ID == "" {
			return false
		}
		q.pending = append(q.pending, op.Prompt)
	case "start":
		for _, p := range q.pending {
			if p.ID == op.ID {
				p.Attempts++
			}
		}
	case "done":
		for i, p := range q.pending {
			if p.ID == op.ID {
				q.pending = append(q.pending[:i:i], q.pending[i+1:]...)
				break
			}
		}
		q.done[op.ID] = true
		q.nDone++
	case "seen":
		for _, id := range op.IDs {
			q.done[id] = true
		}
	default:
		return false
	}
	return true
}

func (q *queue) write(op queueOp) error {
	b, err := json.Marshal(op)
	if err != nil {
		return err
	}
	// A failed write (disk full) is cut off again, so the journal never
	// holds a torn line before a good one.
	off, err := q.f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err := q.f.Write(append(b, '\n')); err != nil {
		_ = q.f.Truncate(off)
		_, _ = q.f.Seek(off, io.SeekStart)
		return err
	}
	return q.f.Sync()
}

// add queues p unless its id was seen before. It returns p's position
// (0 = next or running), or for a duplicate the original's position, -1
// when that one already left the queue.
func (q *queue) add(p Prompt) (pos int, dup bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done[p.ID] {
		return -1, true, nil
	}
	for i, x := range q.pending {
		if x.ID == p.ID {
			return i, true, nil
		}
	}
	if err := q.write(queueOp{Op: "add", Prompt: &p}); err != nil {
		return 0, false, fmt.Errorf("queue prompt %s: %w", p.ID, err)
	}
	q.pending = append(q.pending, &p)
	q.signal()
	return len(q.pending) - 1, false, nil
}

// head returns a copy of the first prompt.
func (q *queue) head() (Prompt, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return Prompt{}, false
	}
	return *q.pending[0], true
}

// start records that a turn began for id.
func (q *queue) start(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.write(queueOp{Op: "start", ID: id}); err != nil {
		return fmt.Errorf("record start of prompt %s: %w", id, err)
	}
	q.apply(queueOp{Op: "start", ID: id})
	return nil
}

// finish takes id off the queue for good.
func (q *queue) finish(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.write(queueOp{Op: "done", ID: id}); err != nil {
		return fmt.Errorf("record end of prompt %s: %w", id, err)
	}
	q.apply(queueOp{Op: "done", ID: id})
	q.signal()
	if q.nDone >= compactAfter {
		if err := q.compact(); err != nil {
			return fmt.Errorf("compact queue: %w", err)
		}
	}
	return nil
}

// compact rewrites the journal as one "seen" op and the pending prompts.
func (q *queue) compact() error {
	var buf []byte
	ids := make([]string, 0, len(q.done))
	for id := range q.done {
		ids = append(ids, id)
	}
	for _, op := range append([]queueOp{{Op: "seen", IDs: ids}}, pendingOps(q.pending)...) {
		b, err := json.Marshal(op)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if err := writeFileDurably(q.path, buf); err != nil {
		return err
	}
	f, err := os.OpenFile(q.path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	q.f.Close()
	q.f = f
	q.nDone = 0
	return nil
}

func pendingOps(ps []*Prompt) []queueOp {
	var ops []queueOp
	for _, p := range ps {
		cp := *p
		attempts := cp.Attempts
		cp.Attempts = 0
		ops = append(ops, queueOp{Op: "add", Prompt: &cp})
		for range attempts {
			ops = append(ops, queueOp{Op: "start", ID: cp.ID})
		}
	}
	return ops
}

// lookup finds id: its position and state (queued, running or done).
func (q *queue) lookup(id string, running string) (PromptStateInfo, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, p := range q.pending {
		if p.ID == id {
			st := "queued"
			if id == running {
				st = "running"
			}
			return PromptStateInfo{State: st, Position: i}, true
		}
	}
	if q.done[id] {
		return PromptStateInfo{State: "done", Position: -1}, true
	}
	return PromptStateInfo{}, false
}

// PromptStateInfo is where a prompt is.
type PromptStateInfo struct {
	State    string
	Position int
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// wait returns a channel closed at the next change.
func (q *queue) wait() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

func (q *queue) signal() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *queue) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.f.Close()
}
