package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// Claude runs Claude Code headless, one process per turn:
//
//	claude -p --output-format stream-json --verbose (--session-id|--resume) ID [Args…]
//
// with the prompt on stdin (no argv length limit, not visible in ps); with
// Prestart, --input-format stream-json and the prompt as one user message.
type Claude struct {
	// Bin is the claude executable.
	Bin string
	// Args are added after the bridge's own (e.g. --permission-mode).
	Args []string
	// Env is extra environment (KEY=VALUE) on top of the bridge's own.
	Env []string
	// Gateway, when not nil, is how the agent reaches the model: every
	// model variable (ModelVar) of the bridge's environment and of Env is
	// dropped and the gateway's URL and the spore's key set instead. Nil
	// is direct mode: the agent uses what it inherits.
	Gateway *Gateway
	// Logger receives the agent's stderr, line by line.
	Logger *slog.Logger
	// KillAfter is how long an interrupted turn may take to exit before
	// its process group is killed.
	KillAfter time.Duration
	// Prestart keeps the next turn's process started and waiting for its
	// prompt (Prepare, prestart.go), so Claude Code's start overlaps the
	// wait for a prompt instead of delaying the reply. It costs one idle
	// Claude Code process (about 150 MiB) while no turn runs.
	Prestart bool

	mu   sync.Mutex
	next *prepared // the process Prepare started, nil when none waits
	gen  int       // bumped by every take and drop: a late relaunch is not kept
}

var _ Starter = (*Claude)(nil)

// Name is KindClaude.
func (c *Claude) Name() string { return KindClaude }

// args returns the command line of a turn, without the binary; streamIn
// when the prompt comes as one stream-json user message (the prestarted
// process's way, prestart.go) rather than as text.
func (c *Claude) args(t Turn, streamIn bool) []string {
	args := []string{"-p", "--output-format", "stream-json"}
	if streamIn {
		args = append(args, "--input-format", "stream-json")
	}
	args = append(args, "--verbose")
	if t.Resume {
		args = append(args, "--resume", t.SessionID)
	} else {
		args = append(args, "--session-id", t.SessionID)
	}
	return append(args, c.Args...)
}

// Start starts one turn: with Prestart, on the process Prepare started
// for it when that one is still right for the turn (prestart.go), else
// on a new one.
func (c *Claude) Start(ctx context.Context, t Turn) (Process, error) {
	if c.Prestart {
		return c.startStreamed(ctx, t)
	}
	p, err := c.launch(c.spec(t, false), strings.NewReader(t.Prompt))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// spec is what a turn's process is started as: all of it, so that a
// process started before its prompt can be told to be the one the turn
// would start. It holds the agent's environment, keys included: it is
// compared, never logged.
type spec struct {
	bin, dir string
	args     []string
	env      []string
}

func (c *Claude) spec(t Turn, streamIn bool) spec {
	return spec{bin: c.Bin, dir: t.Home, args: c.args(t, streamIn), env: agentEnv(os.Environ(), t.Home, c.Env, c.Gateway)}
}

func (s spec) equal(o spec) bool {
	return s.bin == o.bin && s.dir == o.dir && slices.Equal(s.args, o.args) && slices.Equal(s.env, o.env)
}

// launch starts a process as s says, its stdin read from stdin.
func (c *Claude) launch(s spec, stdin io.Reader) (*osProcess, error) {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.Stdin = stdin
	// Its own process group, so an interrupt reaches the tools it runs;
	// Pdeathsig so a SIGKILLed bridge does not leave it writing into the
	// session behind the next bridge's back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start claude: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start claude: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start claude %s: %w", s.bin, err)
	}
	p := &osProcess{cmd: cmd, stdout: stdout, killAfter: c.KillAfter, stderrDone: make(chan struct{})}
	if p.killAfter == 0 {
		p.killAfter = 5 * time.Second
	}
	logger := c.logger()
	go func() {
		defer close(p.stderrDone)
		p.lastStderr = logStderr(logger, cmd.Process.Pid, stderr)
	}()
	return p, nil
}

func (c *Claude) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// agentEnv is the bridge's environment with HOME set to the spore's home,
// extra added, and the bridge token removed; with a gateway, every model
// variable of both replaced by the gateway's.
func agentEnv(base []string, home string, extra []string, gw *Gateway) []string {
	model := func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return gw != nil && ModelVar(name)
	}
	out := make([]string, 0, len(base)+len(extra)+3)
	for _, kv := range base {
		// The bridge's token is never passed on to an agent.
		if strings.HasPrefix(kv, sporeenv.BridgeToken+"=") || strings.HasPrefix(kv, "HOME=") || model(kv) {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "HOME="+home)
	for _, kv := range extra {
		if !model(kv) {
			out = append(out, kv)
		}
	}
	if gw != nil {
		out = append(out, gw.env()...)
	}
	return out
}

// logStderr logs each line of the agent's stderr and returns the last
// one that is not blank (cut as logged): what an agent that exits at
// once says about why.
func logStderr(logger *slog.Logger, pid int, r io.Reader) (last string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 2000 {
			line = line[:2000] + "…"
		}
		logger.Info("agent stderr", "pid", pid, "line", line)
		if strings.TrimSpace(line) != "" {
			last = line
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return last
}

type osProcess struct {
	cmd        *exec.Cmd
	stdout     io.Reader
	killAfter  time.Duration
	stderrDone chan struct{}
	lastStderr string // set before stderrDone closes
}

func (p *osProcess) Stdout() io.Reader { return p.stdout }
func (p *osProcess) PID() int          { return p.cmd.Process.Pid }

// Interrupt sends SIGINT to the turn's process group, and SIGKILL if it
// is still there after KillAfter.
func (p *osProcess) Interrupt() error {
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupt agent %d: %w", pid, err)
	}
	go func() {
		time.Sleep(p.killAfter)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}()
	return nil
}

// Kill ends the turn's whole process group at once.
func (p *osProcess) Kill() error {
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// LastStderr is the last line the turn wrote on its stderr that was not
// blank; call it after Wait.
func (p *osProcess) LastStderr() string { return p.lastStderr }

func (p *osProcess) Wait() error {
	<-p.stderrDone
	return p.cmd.Wait()
}
