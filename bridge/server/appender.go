package server

import (
	"context"
	"encoding/json"
	"time"
)

// Batch bounds: the appender takes whatever lines are waiting, up to
// these, and makes them durable with one write and one fsync.
const (
	maxBatchLines = 4096
	maxBatchBytes = 8 << 20
	// appendRetry is the pause between attempts while the disk refuses.
	appendRetry = 500 * time.Millisecond
)

// maxPendingBytes bounds the lines waiting for a number, so that even an
// agent writing 1 MiB lines cannot make the bridge hold more than this.
const maxPendingBytes = 16 << 20

// emit queues a line for numbering. It blocks while the log cannot keep
// up (or the disk is full), which in turn stops reading the agent's
// output: back-pressure instead of unbounded memory.
func (s *Server) emit(line json.RawMessage) {
	s.pendingMu.Lock()
	for s.pendingBytes > 0 && s.pendingBytes+len(line) > maxPendingBytes {
		s.pendingCond.Wait()
	}
	s.pendingBytes += len(line)
	s.pendingMu.Unlock()
	s.out <- line
}

// release returns the budget of lines that got their numbers.
func (s *Server) release(n int) {
	s.pendingMu.Lock()
	s.pendingBytes -= n
	s.pendingMu.Unlock()
	s.pendingCond.Broadcast()
}

// flushed waits until every line emitted so far has its number (is in
// the log, fsynced). A prompt's end is recorded only after the lines of
// its turn: otherwise a bridge killed between the two would have
// finished the prompt in its queue journal and lost its lines, and the
// new bridge would neither show nor run it again.
func (s *Server) flushed() {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	for s.pendingBytes > 0 {
		s.pendingCond.Wait()
	}
}

// bridgeLine is a line the bridge writes about itself. Its type "bridge"
// is one Claude Code never uses.
func (s *Server) bridgeLine(subtype string, fields map[string]any) {
	m := map[string]any{"type": "bridge", "subtype": subtype, "at": s.cfg.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		s.cfg.Logger.Error("encode bridge line", "subtype", subtype, "err", err)
		return
	}
	s.emit(b)
}

// appender is the log's only writer. A failed append keeps its batch and
// retries it until it succeeds: numbered lines are never dropped, and the
// bridge reports itself unhealthy meanwhile.
//
// ctx must not end before Close: the log drains even while shutting down.
func (s *Server) appender(ctx context.Context) {
	defer close(s.appenderDone)
	batch := make([]json.RawMessage, 0, maxBatchLines)
	for first := range s.out {
		batch = append(batch[:0], first)
		size := len(first)
	fill:
		for len(batch) < maxBatchLines && size < maxBatchBytes {
			select {
			case l, ok := <-s.out:
				if !ok {
					break fill
				}
				batch = append(batch, l)
				size += len(l)
			default:
				break fill
			}
		}
		if g := s.appendGate.Load(); g != nil {
			<-*g
		}
		for {
			_, _, err := s.log.Append(ctx, s.cfg.Now(), batch)
			s.setAppendErr(err)
			if err == nil {
				break
			}
			if s.closing.Load() {
				// Shutting down with a refusing disk: these lines never got
				// numbers, so dropping them loses nothing anyone has seen.
				s.cfg.Logger.Error("append to event log failed at shutdown; lines not numbered", "lines", len(batch), "err", err)
				break
			}
			s.cfg.Logger.Error("append to event log failed; retrying", "lines", len(batch), "err", err)
			time.Sleep(appendRetry)
		}
		s.release(size)
	}
}

func (s *Server) setAppendErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendErr = err
}
