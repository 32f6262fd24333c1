package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/flock"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// Config says where spores live and how to start their bridges.
type Config struct {
	// Root holds homes/<id>/ and run/<id>.{json,lock,log}.
	Root string
	// Binary is the sporectl executable whose `bridge` command is run.
	Binary string
	// Agent is the bridge's agent: a kind of bridge/agent, agent.Default
	// when empty.
	Agent string
	// Env is extra environment for bridges (e.g. SPORECTL_CLAUDE_BIN,
	// ANTHROPIC_BASE_URL); the home and PATH are set here. With ModelURL
	// set, its model variables (agent.ModelVar) are dropped.
	Env []string
	// APIURL is how the spore reaches `sporectl serve` (SPORECTL_API_URL
	// in its environment); empty for none.
	APIURL string
	// ModelURL is serve's model gateway (SPORECTL_MODEL_URL in the
	// bridge's environment): when set, the bridge's agent reaches the
	// model there with the spore's own credential, and no model variable
	// of Env reaches a bridge. Empty is direct mode: Env's pass through.
	ModelURL string
	// StartTimeout is how long after its start a bridge that does not
	// answer /healthz yet is observed as starting (Pending) rather than
	// down, and WaitReady's default limit.
	StartTimeout time.Duration
	// StopTimeout is the grace between SIGTERM and SIGKILL.
	StopTimeout time.Duration
	// LockTimeout bounds the wait for a spore's start lock, which another
	// command's start or stop holds (default 30 s, longer than a stop's
	// grace): a command never hangs on it.
	LockTimeout time.Duration
	Logger      *slog.Logger
	HTTPClient  *http.Client
}

// failpoint is called at named points of Start (tests kill the process
// there); a no-op otherwise.
var failpoint = func(string) {}

// Runtime runs spores as process trees on this machine.
type Runtime struct {
	cfg Config
}

var _ reconcile.Runtime = (*Runtime)(nil)

// New checks cfg and returns the runtime. It starts nothing.
func New(cfg Config) (*Runtime, error) {
	if cfg.Root == "" || cfg.Binary == "" {
		return nil, errors.New("local runtime: root and binary are required")
	}
	if cfg.Agent == "" {
		cfg.Agent = agent.Default
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = 3 * cfg.StopTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 2 * time.Second}
	}
	if cfg.ModelURL != "" {
		// The runtime's own guarantee, whatever its caller hands it: behind
		// the gateway, the key never enters a spore.
		cfg.Env = slices.DeleteFunc(slices.Clone(cfg.Env), func(kv string) bool {
			name, _, _ := strings.Cut(kv, "=")
			return agent.ModelVar(name)
		})
	}
	return &Runtime{cfg: cfg}, nil
}

func (r *Runtime) home(id string) string         { return filepath.Join(r.cfg.Root, "homes", id) }
func (r *Runtime) runPath(id, ext string) string { return filepath.Join(r.cfg.Root, "run", id+ext) }

// tokenPath is where the bridge reads its token when the environment has
// none (bridge/server.LoadToken).
func tokenPath(home string) string { return filepath.Join(home, ".sporectl-bridge", "token") }

// apiTokenPath is the spore's own token for `sporectl serve`.
func apiTokenPath(home string) string { return filepath.Join(home, sporeenv.APITokenFile) }

// Start makes the spore's bridge run. Under the spore's lock it first
// checks for a live bridge (then it is done), so two starts at once never
// run two bridges for one spore.
//
// Start means "requested", as for the Kubernetes runtime: it returns once
// the bridge's process is spawned and its run file durably written, not
// when the bridge answers. Observe shows it Pending until it does; a
// bridge that exits at once is observed Failed (Exited). WaitReady blocks
// until it is ready.
//
// The bridge's environment is the spore's (bridge/sporeenv): its id (the
// mark of its processes), serve's address, the model gateway's when it is
// on, l.Identity, and Config.Env.
func (r *Runtime) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	unlock, err := r.lock(ctx, s.ID)
	if err != nil {
		return err
	}
	defer unlock()
	rf, err := readRunFile(r.runPath(s.ID, ".json"))
	if err != nil {
		return err
	}
	if r.verified(s.ID, rf) {
		// Running already: it keeps the tokens it started with, so
		// nothing is written (the caller rotates tokens only on a start).
		return nil
	}
	// Leftovers of a bridge that died (its agent, a tool it ran) would
	// work on the same home beside the new one.
	if err := r.endProcesses(ctx, s.ID, rf); err != nil {
		return fmt.Errorf("end leftovers of %s: %w", s.ID, err)
	}
	// Under the spore's lock: two starts never both issue credentials.
	creds, err := l.Creds.Credentials(ctx)
	if err != nil {
		return fmt.Errorf("credentials for %s: %w", s.ID, err)
	}
	home := r.home(s.ID)
	if err := os.MkdirAll(filepath.Dir(tokenPath(home)), 0o700); err != nil {
		return fmt.Errorf("create home of %s: %w", s.ID, err)
	}
	if err := writeSecret(tokenPath(home), creds.BridgeToken); err != nil {
		return fmt.Errorf("write bridge token of %s: %w", s.ID, err)
	}
	if creds.APIToken != "" {
		if err := writeSecret(apiTokenPath(home), creds.APIToken); err != nil {
			return fmt.Errorf("write api token of %s: %w", s.ID, err)
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return fmt.Errorf("start %s: %w", s.ID, err)
	}
	if err := r.rotateLog(s.ID); err != nil {
		return err
	}
	logf, err := os.OpenFile(r.runPath(s.ID, logExt), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", s.ID, err)
	}
	defer logf.Close()
	bin, err := r.clientBin()
	if err != nil {
		return fmt.Errorf("start %s: %w", s.ID, err)
	}
	cmd := exec.Command(r.cfg.Binary, "bridge", "--addr", addr, "--home", home, "--agent", r.cfg.Agent)
	cmd.Dir = home
	// The spore's commands (mycologist, swarm) are on its PATH and know
	// who it is and where serve listens; its token is in its home.
	env := []string{"HOME=" + home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), sporeenv.SporeID + "=" + s.ID}
	if r.cfg.APIURL != "" {
		env = append(env, sporeenv.APIURL+"="+r.cfg.APIURL)
	}
	if r.cfg.ModelURL != "" {
		env = append(env, sporeenv.ModelURL+"="+r.cfg.ModelURL)
	}
	env = append(env, sporeenv.Identity+"="+l.Identity)
	cmd.Env = append(env, r.cfg.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: it outlives this command, and its whole tree can be
	// found (and ended) by session id.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start bridge of %s: %w", s.ID, err)
	}
	failpoint("spawned")
	// Until it is reaped below, its pid (and so its process group) cannot
	// be reused, so signalling the group here is safe.
	abandon := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }
	st, err := readProcStat(cmd.Process.Pid)
	if err != nil {
		abandon()
		return fmt.Errorf("start bridge of %s: %w", s.ID, err)
	}
	rf = &runFile{PID: cmd.Process.Pid, StartTime: st.StartTime, BootID: bootID(), Addr: addr, Started: time.Now().UTC()}
	if err := writeRunFile(r.runPath(s.ID, ".json"), rf); err != nil {
		abandon()
		return fmt.Errorf("record bridge of %s: %w", s.ID, err)
	}
	// Reap it if this process lives longer than it (serve, tests). When
	// this process exits first, the bridge, in its own session, carries on.
	go func() { _ = cmd.Wait() }()
	r.cfg.Logger.Info("started bridge", "spore", s.ID, "pid", rf.PID, "addr", addr)
	return nil
}

// WaitReady blocks until the spore's bridge answers /healthz (200, or 503
// from a bridge that serves but cannot append to its log). It locates the
// bridge afresh each time (see locate), so it waits for whichever bridge
// the spore has, whoever started it. It fails when the spore has neither a
// run file nor a marked bridge, when the bridge's process is gone (the
// error names its log), when ctx ends, or after timeout (StartTimeout when
// timeout <= 0).
func (r *Runtime) WaitReady(ctx context.Context, id string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = r.cfg.StartTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		rf, err := readRunFile(r.runPath(id, ".json"))
		if err != nil {
			return fmt.Errorf("wait for bridge of %s: %w", id, err)
		}
		addr, ok := r.locate(id, rf)
		switch {
		case !ok && rf == nil:
			return fmt.Errorf("bridge of %s is not running: %w", id, state.ErrNotFound)
		case !ok:
			if msg := bridge.FatalError(r.exitLog(id)); msg != "" {
				return fmt.Errorf("bridge of %s exited: %s (see %s)", id, transcript.Sanitize(msg), r.runPath(id, logExt))
			}
			return fmt.Errorf("bridge of %s exited; see %s", id, r.runPath(id, logExt))
		}
		if r.answers(wctx, addr) {
			return nil
		}
		select {
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("bridge of %s not healthy after %s; see %s", id, timeout, r.runPath(id, ".log"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// answers asks the bridge at addr for /healthz, for at most a second, and
// reports whether it is serving: 200, or the 503 of a bridge that cannot
// append to its log (docs/bridge.md). That one serves all the same, and
// its /v1/status says what ails it (healthy: false), which the pass asks
// only of a ready bridge.
func (r *Runtime) answers(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable
}

// Stop ends the spore's whole process tree and keeps its home.
func (r *Runtime) Stop(ctx context.Context, id string) error {
	unlock, err := r.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return r.stopLocked(ctx, id)
}

func (r *Runtime) stopLocked(ctx context.Context, id string) error {
	rf, err := readRunFile(r.runPath(id, ".json"))
	if err != nil {
		return err
	}
	if err := r.endProcesses(ctx, id, rf); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	if err := os.Remove(r.runPath(id, ".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	r.cfg.Logger.Info("stopped spore", "spore", id)
	return nil
}

// endProcesses ends everything of the spore: the live bridge's whole
// session, then any process that still carries the spore's mark (children
// of a bridge that died, tools that left the session, or processes whose
// run file was lost or damaged). A process is signalled only if it is the
// verified bridge, in its session while it lives, or marked.
func (r *Runtime) endProcesses(ctx context.Context, id string, rf *runFile) error {
	if r.verified(id, rf) {
		if err := endSession(ctx, rf.PID, func(int) bool { return true }, r.cfg.StopTimeout); err != nil {
			return err
		}
	}
	home := r.home(id)
	return endPIDs(ctx, func() []int { return MarkedProcesses(id, home) }, r.cfg.StopTimeout)
}

// endSession sends SIGTERM to every process of session sid, waits up to
// grace for them to go, then SIGKILLs what is left.
func endSession(ctx context.Context, sid int, owned func(int) bool, grace time.Duration) error {
	return endPIDs(ctx, func() []int {
		var out []int
		for _, pid := range sessionMembers(sid) {
			if owned(pid) {
				out = append(out, pid)
			}
		}
		return out
	}, grace)
}

// endPIDs sends SIGTERM to what members lists, waits up to grace for
// them to go, then SIGKILLs what is left, listing afresh each time.
func endPIDs(ctx context.Context, members func() []int, grace time.Duration) error {
	signalAll := func(sig syscall.Signal) int {
		m := members()
		for _, pid := range m {
			_ = syscall.Kill(pid, sig)
		}
		return len(m)
	}
	if signalAll(syscall.SIGTERM) == 0 {
		return nil
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(members()) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			signalAll(syscall.SIGKILL)
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	for i := 0; i < 50; i++ {
		if signalAll(syscall.SIGKILL) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("processes survived SIGKILL: %v", members())
}

// Delete stops the spore and removes its run files; the home only with
// purgeHome.
func (r *Runtime) Delete(ctx context.Context, id string, purgeHome bool) error {
	unlock, err := r.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.stopLocked(ctx, id); err != nil {
		return err
	}
	_ = os.Remove(r.runPath(id, logExt))
	_ = os.Remove(r.runPath(id, previousLogExt))
	if purgeHome {
		if err := os.RemoveAll(r.home(id)); err != nil {
			return fmt.Errorf("purge home of %s: %w", id, err)
		}
	}
	return nil
}

// Observe looks at every run file and, in one scan of /proc, at every
// process carrying the mark of a spore of this root (whatever its id, so
// orphans too), and asks each live bridge for /healthz, all at once (each
// for at most a second). With named ids it looks at their run files and
// marked processes only, and asks their bridges only. docs/runtimes.md
// has the table:
//
//   - a verified run file (a live process with the spore's mark, at
//     127.0.0.1): Running, ready when it answers /healthz (see answers);
//     Pending while it is starting (see starting), then Running and not
//     ready;
//   - otherwise, one marked process running the bridge command (a wake
//     killed before it recorded its bridge, a damaged run file): asked at
//     the address on its command line (see locate), Running and ready
//     when it answers, else Pending while it is younger than StartTimeout,
//     then Running and not ready; more than one: Running, with their
//     count;
//   - otherwise a run file, or other marked processes (leftovers of a dead
//     bridge): Failed, reason Exited;
//   - nothing: absent.
func (r *Runtime) Observe(ctx context.Context, named []string) (reconcile.FleetObservation, error) {
	obs := reconcile.FleetObservation{Spores: map[string]reconcile.PodObservation{}}
	marked := markedFleet(r.home)
	ids := map[string]bool{}
	if len(named) > 0 {
		// Those alone: their run files are read by name, and no other
		// spore's bridge is asked (the scan of /proc is one either way).
		for _, id := range named {
			ids[id] = true
		}
	} else {
		entries, err := os.ReadDir(filepath.Join(r.cfg.Root, "run"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return obs, fmt.Errorf("observe local spores: %w", err)
		}
		for _, e := range entries {
			if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && state.ValidateID(id) == nil {
				ids[id] = true
			}
		}
		for id := range marked {
			ids[id] = true
		}
	}
	now := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := range ids {
		rf, err := readRunFile(r.runPath(id, ".json"))
		if err != nil {
			rf = nil // unreadable: proves nothing, as a damaged one
		}
		tree := marked[id]
		if tree == nil {
			tree = &markedTree{}
		}
		if !r.verified(id, rf) {
			po, addr, ok := r.unrecorded(id, rf, tree)
			if !ok {
				continue
			}
			if addr == "" {
				obs.Spores[id] = po
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r.answers(ctx, addr) {
					po.State, po.Ready = reconcile.PodRunning, true
				}
				mu.Lock()
				obs.Spores[id] = po
				mu.Unlock()
			}()
			continue
		}
		count := 1
		for _, b := range tree.Bridges {
			if b.PID != rf.PID {
				count++ // another bridge for this spore: reported, never guessed at
			}
		}
		wg.Add(1)
		go func(id string, rf *runFile) {
			defer wg.Done()
			po := reconcile.PodObservation{ID: id, State: reconcile.PodRunning, Owned: true, Count: count}
			switch {
			case r.answers(ctx, rf.Addr):
				po.Ready = true
			case r.starting(rf, now):
				// Started and not answering yet: what a pod is before
				// its container runs.
				po.State = reconcile.PodPending
			}
			mu.Lock()
			obs.Spores[id] = po
			mu.Unlock()
		}(id, rf)
	}
	wg.Wait()
	return obs, nil
}

// unrecorded observes a spore whose run file (rf, nil when absent or
// damaged) does not describe its live bridge (see verified), from its
// marked processes. addr is where to ask the one bridge found (see
// locate), "" when it is not to be asked.
func (r *Runtime) unrecorded(id string, rf *runFile, tree *markedTree) (po reconcile.PodObservation, addr string, ok bool) {
	po = reconcile.PodObservation{ID: id, Owned: true}
	switch {
	case len(tree.Bridges) > 0:
		// Its bridge runs, holding the home, but no run file says so:
		// never "nothing running". Until it answers it is Pending while
		// young (a start may be recording it right now), then Running and
		// not ready; Start and Stop end it by its mark.
		po.State, po.Count = reconcile.PodRunning, len(tree.Bridges)
		youngest := slices.MaxFunc(tree.Bridges, func(a, b markedBridge) int { return cmp.Compare(a.StartTime, b.StartTime) })
		if a, known := age(youngest.procStat); known && a < r.cfg.StartTimeout {
			po.State = reconcile.PodPending
		}
		if len(tree.Bridges) == 1 {
			addr = tree.Bridges[0].Addr
		}
		return po, addr, true
	case rf != nil || tree.Others > 0:
		// Started and not stopped, but its bridge is gone: it exited or
		// the machine rebooted. Leftovers of it (tools) are ended by the
		// next Start or Stop.
		po.State, po.Reason, po.Exited = reconcile.PodFailed, "Exited", true
		po.ExitLog = r.exitLog(id)
		return po, "", true
	}
	return po, "", false
}

// starting reports whether a bridge that does not answer yet may still be
// starting: its run file says it started less than StartTimeout before
// now. A start time in the future (the clock went back) proves nothing,
// so it is not starting.
func (r *Runtime) starting(rf *runFile, now time.Time) bool {
	since := now.Sub(rf.Started)
	return !rf.Started.IsZero() && since >= 0 && since < r.cfg.StartTimeout
}

// Bridge says how to reach the spore's bridge: loopback, at the address in
// its run file, with the token in its home.
func (r *Runtime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	rf, err := readRunFile(r.runPath(id, ".json"))
	if err != nil {
		return reconcile.BridgeEndpoint{}, err
	}
	addr, ok := r.locate(id, rf)
	if !ok {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("bridge of %s is not running: %w", id, state.ErrNotFound)
	}
	tok, err := os.ReadFile(tokenPath(r.home(id)))
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("read bridge token of %s: %w", id, err)
	}
	return reconcile.BridgeEndpoint{BaseURL: "http://" + addr, Token: strings.TrimSpace(string(tok)), Client: r.cfg.HTTPClient}, nil
}

// locate says where spore id's bridge listens: at the address of its run
// file rf when that is verified; else, when exactly one process carries
// the spore's mark and runs its bridge command (a start killed before it
// recorded it, a run file damaged or lost), at the 127.0.0.1 address on
// that process's command line. Found that way, the bridge is the spore's
// as much as a recorded one: Start issued its tokens (their hash is in the
// store before any start) and marked it.
func (r *Runtime) locate(id string, rf *runFile) (string, bool) {
	if r.verified(id, rf) {
		return rf.Addr, true
	}
	home := r.home(id)
	var found []markedBridge
	liveProcesses(func(st procStat) bool {
		if !hasMark(st.PID, id, home) {
			return false
		}
		if addr, ok := bridgeAddr(st, home); ok {
			found = append(found, markedBridge{st, addr})
		}
		return false
	})
	if len(found) != 1 || found[0].Addr == "" {
		return "", false
	}
	return found[0].Addr, true
}

func writeSecret(path, secret string) error {
	// Not through a symlink: the home is the agent's, and a link planted
	// there must not make a start write a token somewhere else.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freeAddr picks a free loopback port. Another process may take it before
// the bridge binds; the bridge then exits, which Observe and WaitReady
// report.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// lock serialises start/stop of one spore across processes. It waits as
// long as ctx allows, and returns ctx.Err() itself when ctx ends first.
func (r *Runtime) lock(ctx context.Context, id string) (func(), error) {
	if err := os.MkdirAll(filepath.Join(r.cfg.Root, "run"), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", id, err)
	}
	unlock, err := flock.Acquire(ctx, r.runPath(id, ".lock"), r.cfg.LockTimeout)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	if errors.Is(err, flock.ErrTimeout) {
		return nil, fmt.Errorf("spore %s is busy: another sporectl command has held its start lock (%s) for %s; try again: %w",
			id, r.runPath(id, ".lock"), r.cfg.LockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", id, err)
	}
	return unlock, nil
}

// clientBin is the directory of the spore's own commands: `mycologist`
// and `swarm`, links to the sporectl binary (which dispatches on its
// name). Made once per root; a link that points elsewhere is replaced
// through a rename, never written through.
func (r *Runtime) clientBin() (string, error) {
	dir := filepath.Join(r.cfg.Root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make %s: %w", dir, err)
	}
	for _, name := range []string{"mycologist", "swarm"} {
		link := filepath.Join(dir, name)
		if cur, err := os.Readlink(link); err == nil && cur == r.cfg.Binary {
			continue
		}
		tmp := link + ".tmp"
		_ = os.Remove(tmp)
		if err := os.Symlink(r.cfg.Binary, tmp); err != nil {
			return "", fmt.Errorf("link %s: %w", name, err)
		}
		if err := os.Rename(tmp, link); err != nil {
			return "", fmt.Errorf("link %s: %w", name, err)
		}
	}
	return dir, nil
}
