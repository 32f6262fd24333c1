// Package agent starts the programs a bridge drives, one turn at a time:
// Claude Code itself (claude -p … --output-format stream-json) and Echo,
// a built-in stand-in that answers in Claude Code's line shape for demos
// and machines without an API key.
//
// A turn is one process (or, for Echo, one goroutine) that reads the
// prompt, writes stream-json lines to its stdout and exits. The package
// owns nothing durable; it must never pass the bridge's token to an agent,
// nor, behind the model gateway (Gateway), any model credential but the
// spore's own.
package agent

import (
	"context"
	"io"
)

// Turn is one prompt to run on a session.
type Turn struct {
	// Home is the spore's home: the agent's working directory and $HOME,
	// so Claude's session (~/.claude) lives and survives there.
	Home      string
	SessionID string
	// Resume is true once the session exists: Claude Code is then given
	// --resume instead of --session-id.
	Resume bool
	Prompt string
}

// Process is a running turn.
type Process interface {
	// Stdout yields the turn's lines; it reaches EOF when the turn ends.
	Stdout() io.Reader
	// PID is the operating-system process id, 0 for in-process agents.
	PID() int
	// Interrupt asks the turn to stop now.
	Interrupt() error
	// Wait waits for the end of the turn, after Stdout is drained.
	Wait() error
}

// Starter starts turns; both agents of this package are Starters.
type Starter interface {
	Name() string
	Start(ctx context.Context, t Turn) (Process, error)
}
