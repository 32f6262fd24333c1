package server

import (
	"context"

	"github.com/sporectl/sporectl/bridge/agent"
)

// An agent that can start the next turn's process before its prompt
// comes (agent.Claude with Prestart) is asked to when the bridge starts
// and after each turn that finished, so that the process's start overlaps
// the wait for a prompt. Not after a turn that died (its retry waits out
// a backoff, and a crashing agent must not be restarted behind it) nor an
// interrupted one (a person stopped the agent).

// preparer is an agent that keeps the next turn's process waiting.
type preparer interface {
	Prepare(ctx context.Context, t agent.Turn) error
	DropPrepared()
}

// prepareNext has the agent start the next turn's process, for the
// session as the next turn will use it.
func (s *Server) prepareNext(ctx context.Context) {
	pr, ok := s.cfg.Agent.(preparer)
	if !ok || ctx.Err() != nil {
		return
	}
	t := agent.Turn{Home: s.cfg.Home, SessionID: s.sess.ID, Resume: s.resume()}
	if err := pr.Prepare(ctx, t); err != nil {
		s.cfg.Logger.Warn("cannot start the next turn's agent before its prompt; the turn will", "err", err)
	}
}

// dropPrepared ends the process waiting for the next prompt, if any.
func (s *Server) dropPrepared() {
	if pr, ok := s.cfg.Agent.(preparer); ok {
		pr.DropPrepared()
	}
}
