package server

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

type outcome int

const (
	finished    outcome = iota // the turn reached its result
	interrupted                // a person stopped it
	died                       // the agent exited without a result
	stopped                    // the bridge is shutting down
)

// RunAgent feeds the queue to the agent, one turn at a time, until ctx
// ends. A prompt leaves the queue when its turn finishes, is interrupted,
// or has died MaxAttempts times; until then a bridge restart runs it again.
func (s *Server) RunAgent(ctx context.Context) {
	s.bridgeLine("bridge_started", map[string]any{"session_id": s.sess.ID, "agent": s.cfg.Agent.Name(),
		"last_seq": s.log.Last(), "queue": s.queue.len()})
	s.setState(bridge.StateIdle)
	defer s.dropPrepared()
	s.prepareNext(ctx)
	for ctx.Err() == nil {
		changed := s.queue.wait()
		p, ok := s.queue.head()
		if !ok {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if err := s.queue.start(p.ID); err != nil {
			s.cfg.Logger.Error("cannot record turn start; retrying", "err", err)
			sleep(ctx, appendRetry)
			continue
		}
		p.Attempts++
		out, detail := s.turn(ctx, p)
		switch out {
		case stopped:
			return
		case finished, interrupted:
			s.mu.Lock()
			s.failures = 0
			s.mu.Unlock()
			s.finish(ctx, p.ID)
			if out == finished {
				s.prepareNext(ctx)
			}
		case died:
			s.mu.Lock()
			s.restarts++
			s.failures++
			n := s.failures
			s.mu.Unlock()
			giveUp := p.Attempts >= s.cfg.MaxAttempts
			wait := s.backoff(n)
			s.bridgeLine("agent_exited", map[string]any{"prompt_id": p.ID, "attempt": p.Attempts, "exit": detail,
				"will_retry": !giveUp, "restart_in_ms": wait.Milliseconds(), "failures_in_a_row": n})
			s.cfg.Logger.Warn("agent died mid-turn", "prompt", p.ID, "attempt", p.Attempts, "exit", detail, "restart_in", wait)
			if giveUp {
				s.bridgeLine("prompt_abandoned", map[string]any{"prompt_id": p.ID, "attempts": p.Attempts})
				s.finish(ctx, p.ID)
			}
			s.pause(ctx, wait)
		}
	}
}

// backoff is the wait after the n-th death in a row.
func (s *Server) backoff(n int) time.Duration {
	d := s.cfg.BackoffBase
	for i := 1; i < n && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.BackoffMax)
}

// pause waits in state backoff.
func (s *Server) pause(ctx context.Context, d time.Duration) {
	s.mu.Lock()
	s.state, s.backoffUntil = bridge.StateBackoff, s.cfg.Now().Add(d)
	s.mu.Unlock()
	sleep(ctx, d)
	s.setState(bridge.StateIdle)
}

func (s *Server) finish(ctx context.Context, id string) {
	s.flushed() // the turn's lines first (appender.go)
	for {
		err := s.queue.finish(id)
		if err == nil {
			return
		}
		s.cfg.Logger.Error("cannot record end of prompt; retrying", "prompt", id, "err", err)
		if !sleep(ctx, appendRetry) {
			return
		}
	}
}

// turn runs one prompt to its end.
func (s *Server) turn(ctx context.Context, p Prompt) (outcome, string) {
	resume := s.resume()
	text := p.Text
	if p.Attempts > 1 {
		// The agent died in this prompt before; tell it, so it checks what
		// was already done instead of blindly doing it twice.
		text = fmt.Sprintf("[sporectl bridge: Claude Code stopped before finishing this prompt (attempt %d of %d). "+
			"Some of its steps may already be done; check before repeating them.]\n\n%s", p.Attempts, s.cfg.MaxAttempts, p.Text)
	}
	s.bridgeLine("turn_started", map[string]any{"prompt_id": p.ID, "from": p.From, "text": p.Text,
		"attempt": p.Attempts, "session_id": s.sess.ID, "resume": resume})

	proc, err := s.cfg.Agent.Start(ctx, agent.Turn{Home: s.cfg.Home, SessionID: s.sess.ID, Resume: resume, Prompt: text})
	if err != nil {
		detail := fmt.Sprintf("start: %v", err)
		s.setAgentError(detail)
		return died, detail
	}
	s.mu.Lock()
	s.proc, s.running, s.interrupted, s.blocked = proc, p.ID, false, false
	s.state = bridge.StateWorking
	s.mu.Unlock()

	stopOnCancel := context.AfterFunc(ctx, func() { _ = proc.Interrupt() })
	var watch turnWatch
	readErr := s.pump(proc.Stdout(), &watch)
	waitErr := proc.Wait()
	stopOnCancel()

	s.mu.Lock()
	wasInterrupted := s.interrupted
	s.proc, s.running, s.state = nil, "", bridge.StateIdle
	// Started only once Claude Code has kept the session: a turn killed
	// between its init line and its first write leaves nothing to resume,
	// and --resume would then fail with "No conversation found".
	if !s.sess.Started && (watch.sawResult || claudeHasSession(s.cfg.Home, s.sess.ID)) {
		s.sess.Started = true
		if err := saveSession(s.dir, s.sess); err != nil {
			s.cfg.Logger.Error("cannot mark session started", "err", err)
		}
	}
	s.blocked = watch.blocked
	s.mu.Unlock()

	s.noteStart(ctx, proc, watch, waitErr, readErr, wasInterrupted)
	switch {
	case ctx.Err() != nil:
		return stopped, ""
	case wasInterrupted:
		s.bridgeLine("interrupted", map[string]any{"prompt_id": p.ID})
		return interrupted, ""
	case watch.sawResult:
		return finished, ""
	}
	return died, exitDetail(waitErr, readErr)
}

func exitDetail(waitErr, readErr error) string {
	switch {
	case waitErr != nil:
		return waitErr.Error()
	case readErr != nil:
		return readErr.Error()
	}
	return "exited without a result"
}

// resume says whether the next turn resumes the session rather than
// creating it.
func (s *Server) resume() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess.Started || claudeHasSession(s.cfg.Home, s.sess.ID)
}

// Interrupt stops the running turn; false when none runs. A process
// waiting for the next prompt is ended too: a person who stops the agent
// leaves none running (the next one starts after the next finished turn).
func (s *Server) Interrupt() (bool, error) {
	s.dropPrepared()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false, nil
	}
	s.interrupted = true
	if err := s.proc.Interrupt(); err != nil {
		return true, fmt.Errorf("interrupt turn %s: %w", s.running, err)
	}
	return true, nil
}

func (s *Server) setState(st bridge.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = st
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
