package server

import (
	"context"
	"unicode/utf8"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

// An agent that cannot start (its binary gone, not executable, or
// exiting before it writes a line: a broken install, a bad flag) is
// told apart from one that dies mid-turn: the bridge keeps why its last
// start failed and reports it in its status (agent_error), so that the
// pass can name it ("the agent cannot start: …") instead of "the agent
// keeps dying". It lasts until a turn starts, that is until the agent
// writes a line.

// lastStderr is what an agent process may say of its stderr's end
// (agent.Claude's processes do).
type lastStderr interface{ LastStderr() string }

// noteStart records, after a turn, whether its agent started: a line
// written clears the last start error; none, and no interrupt nor
// shutdown to explain it, sets it to how the process ended and the last
// thing it said on stderr.
func (s *Server) noteStart(ctx context.Context, proc agent.Process, watch turnWatch, waitErr, readErr error, interrupted bool) {
	switch {
	case watch.lines > 0:
		s.setAgentError("")
	case ctx.Err() != nil, interrupted:
	default:
		why := "exited before writing a line: " + exitDetail(waitErr, readErr)
		if ls, ok := proc.(lastStderr); ok && ls.LastStderr() != "" {
			why += "; its stderr ends: " + ls.LastStderr()
		}
		s.setAgentError(why)
	}
}

// setAgentError keeps why, cut to bridge.MaxStatusText bytes at a
// character's start.
func (s *Server) setAgentError(why string) {
	if len(why) > bridge.MaxStatusText {
		cut := bridge.MaxStatusText - len("…")
		for cut > 0 && !utf8.RuneStart(why[cut]) {
			cut--
		}
		why = why[:cut] + "…"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if why != "" && s.agentErr == "" {
		s.cfg.Logger.Warn("the agent cannot start", "why", why)
	}
	s.agentErr = why
}
