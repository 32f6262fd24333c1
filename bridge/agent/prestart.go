package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// Prestart: the next turn's Claude Code is started before its prompt.
// Claude Code takes most of a second (seconds on a loaded node) to start
// before it reads its prompt; with --input-format stream-json it starts,
// then waits for a user message on its stdin for as long as stdin stays
// open, runs that turn once stdin closes, and writes the same lines as a
// turn given its prompt as text (the init line comes after the message).
// So the bridge starts the next turn's process when it has none running
// (Prepare), and the turn hands it the prompt (Start).
//
// The process kept is only ever handed a prompt if it is the one the turn
// would start now (spec.equal: binary, home, arguments with the session
// id and --resume or --session-id, and the whole environment, the
// gateway's key included) and has not exited; otherwise it is ended and
// the turn starts a new one. A prompt that could not be written whole to
// it (the process died: EPIPE; or did not read it in handTimeout) goes to
// a new process: the old one never had a whole line to act on.

// idleRelaunchAfter: a waiting process that exits on its own after
// waiting this long is replaced at once; one that exits sooner is not
// (a broken install or flag would be restarted in a loop): the next turn
// starts its own, which says why it fails the usual way (agent_error).
var idleRelaunchAfter = 10 * time.Second

// handTimeout bounds the writing of a prompt to a process that waits for
// it: it reads its stdin while it waits, so only a stuck one takes long.
const handTimeout = 10 * time.Second

// prepared is a process started for a turn whose prompt has not come.
type prepared struct {
	spec   spec
	proc   *osProcess
	stdin  *os.File
	born   time.Time
	exited chan struct{} // closed once the process has exited (reaped or not)
}

// Prepare starts the process of turn t (its Prompt is not used) and
// leaves it waiting for the prompt; a process already waiting that is
// right for t is kept, one that is not is ended first. Without Prestart
// it does nothing. An error only means the turn will start its process
// itself.
func (c *Claude) Prepare(ctx context.Context, t Turn) error {
	if !c.Prestart {
		return nil
	}
	s := c.spec(t, true)
	c.mu.Lock()
	if c.next != nil && c.next.spec.equal(s) && !c.next.hasExited() {
		c.mu.Unlock()
		return nil
	}
	old := c.next
	c.next = nil
	c.gen++
	gen := c.gen
	c.mu.Unlock()
	if old != nil {
		c.logger().Info("ending the waiting agent: the next turn is another", "pid", old.proc.PID(), "differs", old.spec.differs(s))
		old.discard()
	}
	return c.prepare(ctx, s, gen)
}

// DropPrepared ends the waiting process, if any, and reaps it: on the
// bridge's shutdown and a person's interrupt no Claude Code is left.
func (c *Claude) DropPrepared() {
	c.mu.Lock()
	p := c.next
	c.next = nil
	c.gen++
	c.mu.Unlock()
	if p != nil {
		p.discard()
	}
}

// PreparedPID is the pid of the process waiting for the next prompt, 0
// when none waits (status and tests).
func (c *Claude) PreparedPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		return 0
	}
	return c.next.proc.PID()
}

// prepare starts a waiting process as s says and keeps it, unless a take
// or a drop came since gen.
func (c *Claude) prepare(ctx context.Context, s spec, gen int) error {
	p, err := c.launchWaiting(s)
	if err != nil {
		return fmt.Errorf("prestart claude: %w", err)
	}
	c.mu.Lock()
	keep := c.gen == gen && c.next == nil
	if keep {
		c.next = p
	}
	c.mu.Unlock()
	if !keep {
		p.discard()
		return nil
	}
	go c.watch(ctx, p)
	return nil
}

// launchWaiting starts a process whose stdin the caller writes.
func (c *Claude) launchWaiting(s spec) (*prepared, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	proc, err := c.launch(s, r)
	_ = r.Close() // the child has its own
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	return &prepared{spec: s, proc: proc, stdin: w, born: time.Now(), exited: make(chan struct{})}, nil
}

// watch notices the waiting process's exit: if no turn took it, it is
// reaped and, if it had waited long enough, replaced.
func (c *Claude) watch(ctx context.Context, p *prepared) {
	waitExit(p.proc.PID())
	close(p.exited)
	c.mu.Lock()
	mine := c.next == p
	if mine {
		c.next = nil
		c.gen++
	}
	gen := c.gen
	relaunchAfter := idleRelaunchAfter // under c.mu: tests change it
	c.mu.Unlock()
	if !mine {
		return // a turn took it, or it was dropped
	}
	p.discard()
	lived := time.Since(p.born)
	relaunch := lived >= relaunchAfter
	c.logger().Warn("the agent waiting for a prompt exited", "pid", p.proc.PID(), "waited", lived.Round(time.Millisecond),
		"exit", p.proc.cmd.ProcessState.String(), "stderr", p.proc.LastStderr(), "replaced", relaunch)
	if relaunch {
		if err := c.prepare(ctx, p.spec, gen); err != nil {
			c.logger().Warn("cannot replace the waiting agent", "err", err)
		}
	}
}

// take removes the waiting process and returns it if it is the one s
// says and has not exited; otherwise it ends it and returns nil.
func (c *Claude) take(s spec) *prepared {
	c.mu.Lock()
	p := c.next
	c.next = nil
	c.gen++
	c.mu.Unlock()
	switch {
	case p == nil:
		return nil
	case !p.spec.equal(s):
		c.logger().Info("the waiting agent is not this turn's; starting afresh", "pid", p.proc.PID(), "differs", p.spec.differs(s))
	case p.hasExited():
		c.logger().Warn("the waiting agent has exited; starting afresh", "pid", p.proc.PID())
	default:
		return p
	}
	p.discard()
	return nil
}

// startStreamed starts a turn on the waiting process, or on a new one
// when there is none to use.
func (c *Claude) startStreamed(ctx context.Context, t Turn) (Process, error) {
	s := c.spec(t, true)
	line := userMessage(t.Prompt)
	if p := c.take(s); p != nil {
		err := p.hand(line)
		if err == nil {
			return p.proc, nil
		}
		c.logger().Warn("the waiting agent did not take the prompt; starting afresh", "pid", p.proc.PID(), "err", err)
		p.discard()
	}
	p, err := c.launchWaiting(s)
	if err != nil {
		return nil, err
	}
	// Written while it starts, not waited for here: a new process reads
	// its stdin only once started, and a turn must be interruptible
	// meanwhile. A process that exits first gets EPIPE and its turn ends
	// without a line, as a text prompt's would.
	go func() {
		_, _ = p.stdin.Write(line)
		_ = p.stdin.Close()
	}()
	return p.proc, nil
}

// hand writes the prompt, whole, to a waiting process and closes its
// stdin: it then runs the turn and exits.
func (p *prepared) hand(line []byte) error {
	defer p.stdin.Close()
	if err := p.stdin.SetWriteDeadline(time.Now().Add(handTimeout)); err != nil {
		return fmt.Errorf("hand the prompt to claude %d: %w", p.proc.PID(), err)
	}
	if _, err := p.stdin.Write(line); err != nil {
		return fmt.Errorf("hand the prompt to claude %d: %w", p.proc.PID(), err)
	}
	return nil
}

// discard kills the process's group and reaps it.
func (p *prepared) discard() {
	_ = p.stdin.Close()
	_ = p.proc.Kill()
	_ = p.proc.Wait()
}

func (p *prepared) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return exitedNow(p.proc.PID())
	}
}

// userMessage is the prompt as Claude Code's stream-json input takes it:
// one user message on one line.
func userMessage(prompt string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{"user", message{"user", prompt}})
	return append(b, '\n')
}

// differs names the first part of what a process is started as that is
// not the same in o, never its value (the environment holds keys).
func (s spec) differs(o spec) string {
	switch {
	case s.bin != o.bin:
		return "binary"
	case s.dir != o.dir:
		return "home"
	case !slices.Equal(s.args, o.args):
		return "arguments"
	case !slices.Equal(s.env, o.env):
		return "environment"
	}
	return ""
}
