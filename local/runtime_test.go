package local

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

var sporectlBin string

func TestMain(m *testing.M) {
	if root := os.Getenv(starterRootEnv); root != "" {
		starter(root)
		return
	}
	if os.Getenv(fullDiskBridgeEnv) != "" {
		os.Exit(fullDiskBridge(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "local-rt-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sporectlBin = filepath.Join(dir, "sporectl")
	if out, err := exec.Command("go", "build", "-o", sporectlBin, "../cmd/sporectl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sporectl: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newRuntime(t *testing.T, agent string, env ...string) *Runtime {
	t.Helper()
	r, err := New(Config{Root: t.TempDir(), Binary: sporectlBin, Agent: agent, Env: env, StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	return r
}

// waitReady waits for spore id's bridge to answer, as a caller that needs
// it (wake --wait) does: Start does not wait.
func waitReady(t *testing.T, r *Runtime, id string) {
	t.Helper()
	require.NoError(t, r.WaitReady(context.Background(), id, 30*time.Second))
}

func spore(id string) state.Spore {
	return state.Spore{Wish: state.Wish{ID: id, Colony: "default", Rank: state.RankSpore, Desired: state.Running}}
}

var creds = reconcile.Credentials{APIToken: "spt_api_test_token", BridgeToken: "bridge-test-token"}

// marked lists live processes carrying spore id's mark (any home).
func marked(id string) []int {
	return liveProcesses(func(st procStat) bool { return hasEnv(st.PID, sporeenv.SporeID+"="+id) })
}

func observe(t *testing.T, r *Runtime, id string) (reconcile.PodObservation, bool) {
	t.Helper()
	obs, err := r.Observe(context.Background(), nil)
	require.NoError(t, err)
	po, ok := obs.Spores[id]
	return po, ok
}

func TestStartObserveStop(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "alpha", true) })
	require.NoError(t, r.Start(ctx, spore("alpha"), reconcile.Launch{Creds: creds}))
	waitReady(t, r, "alpha")

	po, ok := observe(t, r, "alpha")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
	require.Equal(t, 1, po.Count)

	ep, err := r.Bridge(ctx, "alpha")
	require.NoError(t, err)
	c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
	require.NoError(t, err)
	st, err := c.Status(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, st.State)
	bad, err := bridge.NewClient(ep.BaseURL, "wrong", ep.Client)
	require.NoError(t, err)
	_, err = bad.Status(ctx)
	require.Error(t, err, "the bridge got the token we wrote, not any token")

	// Starting a running spore is success and starts nothing new.
	before := marked("alpha")
	require.NoError(t, r.Start(ctx, spore("alpha"), reconcile.Launch{Creds: creds}))
	require.ElementsMatch(t, before, marked("alpha"))

	require.NoError(t, r.Stop(ctx, "alpha"))
	require.Empty(t, marked("alpha"), "processes left after stop")
	_, ok = observe(t, r, "alpha")
	require.False(t, ok, "a stopped spore is absent")
	require.DirExists(t, r.home("alpha"), "stop keeps the home")
	tok, err := os.ReadFile(apiTokenPath(r.home("alpha")))
	require.NoError(t, err)
	require.Equal(t, creds.APIToken+"\n", string(tok))
	fi, err := os.Stat(tokenPath(r.home("alpha")))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestConcurrentStarts: many starts at once run exactly one bridge.
func TestConcurrentStarts(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "twin", true) })
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// A separate Runtime value per caller, as separate processes have.
			r2, _ := New(r.cfg)
			errs[i] = r2.Start(ctx, spore("twin"), reconcile.Launch{Creds: creds})
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, marked("twin"), 1, "one bridge process for one spore")
}

// TestKilledBridge: a bridge killed by SIGKILL is observed as Failed
// (Exited), and the next Start replaces the stale run file.
func TestKilledBridge(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "victim", true) })
	require.NoError(t, r.Start(ctx, spore("victim"), reconcile.Launch{Creds: creds}))
	rf, err := readRunFile(r.runPath("victim", ".json"))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(rf.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !rf.alive() }, 5*time.Second, 10*time.Millisecond)

	po, ok := observe(t, r, "victim")
	require.True(t, ok)
	require.Equal(t, reconcile.PodFailed, po.State)
	require.Equal(t, "Exited", po.Reason)
	_, err = r.Bridge(ctx, "victim")
	require.ErrorIs(t, err, state.ErrNotFound)

	require.NoError(t, r.Start(ctx, spore("victim"), reconcile.Launch{Creds: creds}))
	waitReady(t, r, "victim")
	po, _ = observe(t, r, "victim")
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
}

// TestStaleRunFileNeverSignals: a run file naming a live process that is
// not the bridge (pid reuse, another boot) is not believed, and Stop must
// not signal that process.
func TestStaleRunFileNeverSignals(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	innocent := exec.Command("sleep", "30")
	require.NoError(t, innocent.Start())
	t.Cleanup(func() { _ = innocent.Process.Kill(); _ = innocent.Wait() })
	st, err := readProcStat(innocent.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(r.cfg.Root, "run"), 0o700))
	for name, rf := range map[string]*runFile{
		"other-start": {PID: innocent.Process.Pid, StartTime: st.StartTime + 1, BootID: bootID(), Addr: "127.0.0.1:1"},
		"other-boot":  {PID: innocent.Process.Pid, StartTime: st.StartTime, BootID: "another-boot", Addr: "127.0.0.1:1"},
	} {
		require.NoError(t, writeRunFile(r.runPath(name, ".json"), rf))
		po, ok := observe(t, r, name)
		require.True(t, ok)
		require.NotEqual(t, reconcile.PodRunning, po.State, name)
		require.NoError(t, r.Stop(ctx, name))
		require.NoError(t, syscall.Kill(innocent.Process.Pid, 0), "%s: stop signalled a process that was not the spore's", name)
		_, ok = observe(t, r, name)
		require.False(t, ok)
	}
	// A damaged run file is not a pid either.
	require.NoError(t, os.WriteFile(r.runPath("garbage", ".json"), []byte("{not json"), 0o600))
	require.NoError(t, r.Stop(ctx, "garbage"))
	require.NoError(t, syscall.Kill(innocent.Process.Pid, 0))
}

// fakeClaude is an agent that leaves a grandchild behind, as Claude Code's
// tools may: stop must end the whole tree.
const fakeClaude = `#!/bin/sh
sleep 300 &
sleep 300
`

func TestStopEndsWholeTree(t *testing.T) {
	ctx := context.Background()
	script := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(script, []byte(fakeClaude), 0o755))
	for _, leaderDead := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaderDead=%v", leaderDead), func(t *testing.T) {
			r := newRuntime(t, "claude", "SPORECTL_CLAUDE_BIN="+script)
			t.Cleanup(func() { _ = r.Delete(ctx, "tree", true) })
			require.NoError(t, r.Start(ctx, spore("tree"), reconcile.Launch{Creds: creds}))
			waitReady(t, r, "tree")
			ep, err := r.Bridge(ctx, "tree")
			require.NoError(t, err)
			c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
			require.NoError(t, err)
			_, err = c.Prompt(ctx, bridge.PromptRequest{ID: "p1", From: "user:test", Text: "work"})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return len(marked("tree")) >= 3 }, 10*time.Second, 20*time.Millisecond,
				"bridge, agent and its child should be running")
			if leaderDead {
				rf, _ := readRunFile(r.runPath("tree", ".json"))
				require.NoError(t, syscall.Kill(rf.PID, syscall.SIGKILL))
				require.Eventually(t, func() bool { return !rf.alive() }, 5*time.Second, 10*time.Millisecond)
				require.NotEmpty(t, marked("tree"), "the agent outlives its bridge")
			}
			require.NoError(t, r.Stop(ctx, "tree"))
			require.Eventually(t, func() bool { return len(marked("tree")) == 0 }, 5*time.Second, 20*time.Millisecond, "orphans left: %v", marked("tree"))
		})
	}
}

func TestDeletePurge(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	require.NoError(t, r.Start(ctx, spore("keep"), reconcile.Launch{Creds: creds}))
	require.NoError(t, r.Start(ctx, spore("purge"), reconcile.Launch{Creds: creds}))
	require.NoError(t, r.Delete(ctx, "keep", false))
	require.NoError(t, r.Delete(ctx, "purge", true))
	require.DirExists(t, r.home("keep"))
	require.NoDirExists(t, r.home("purge"))
	require.Empty(t, marked("keep"))
	require.Empty(t, marked("purge"))
	obs, err := r.Observe(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, obs.Spores)
}

func hasEnv(pid int, kv string) bool {
	b, err := environ(pid)
	if err != nil {
		return false
	}
	for _, e := range strings.Split(string(b), "\x00") {
		if e == kv {
			return true
		}
	}
	return false
}

// TestDamagedRunFileStillStops: with its run file damaged, a sleeping
// spore's processes are still found by their mark and ended.
func TestDamagedRunFileStillStops(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "scarred", true) })
	require.NoError(t, r.Start(ctx, spore("scarred"), reconcile.Launch{Creds: creds}))
	require.NotEmpty(t, marked("scarred"))
	require.NoError(t, os.WriteFile(r.runPath("scarred", ".json"), []byte("{torn"), 0o600))
	require.NoError(t, r.Stop(ctx, "scarred"))
	require.Eventually(t, func() bool { return len(marked("scarred")) == 0 }, 5*time.Second, 20*time.Millisecond)
}

// TestMarkNeedsTheHome: a process with the same spore id but another home
// (a spore of another store on this machine) is not this spore's.
func TestMarkNeedsTheHome(t *testing.T) {
	ctx := context.Background()
	a, b := newRuntime(t, "echo"), newRuntime(t, "echo")
	t.Cleanup(func() { _ = a.Delete(ctx, "twin2", true); _ = b.Delete(ctx, "twin2", true) })
	require.NoError(t, a.Start(ctx, spore("twin2"), reconcile.Launch{Creds: creds}))
	require.NoError(t, b.Start(ctx, spore("twin2"), reconcile.Launch{Creds: creds}))
	require.Len(t, marked("twin2"), 2)
	require.NoError(t, b.Stop(ctx, "twin2"))
	require.Len(t, marked("twin2"), 1, "stopping one store's spore ended the other's")
	waitReady(t, a, "twin2")
	po, ok := observe(t, a, "twin2")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// gatedBridge is a Binary that runs the real bridge (same pid, so the run
// file still describes it) only once open is called: until then it does
// not answer, however slowly the machine gets to the test's next look (a
// fixed delay here was outrun by a loaded machine, and a bridge meant to
// be starting answered).
func gatedBridge(t *testing.T) (bin string, open func()) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "open")
	bin = script(t, "gated-sporectl", fmt.Sprintf("while [ ! -e %q ]; do sleep 0.05; done\nexec %q \"$@\"\n", gate, sporectlBin))
	return bin, func() { require.NoError(t, os.WriteFile(gate, nil, 0o600)) }
}

// TestStartDoesNotWait: Start returns once the bridge is spawned and
// recorded; until it answers /healthz it is observed Pending, then
// Running and ready.
func TestStartDoesNotWait(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	bin, open := gatedBridge(t)
	r.cfg.Binary = bin
	t.Cleanup(func() { _ = r.Delete(ctx, "slow", true) })

	// The bridge cannot answer until the gate opens: Start returning at
	// all shows it did not wait for it.
	require.NoError(t, r.Start(ctx, spore("slow"), reconcile.Launch{Creds: creds}))
	rf, err := readRunFile(r.runPath("slow", ".json"))
	require.NoError(t, err)
	require.True(t, rf.alive(), "the run file describes the spawned bridge")

	po, ok := observe(t, r, "slow")
	require.True(t, ok)
	require.Equal(t, reconcile.PodPending, po.State, "a just-started bridge is starting")
	require.False(t, po.Ready)
	require.Equal(t, 1, po.Count)
	require.True(t, po.Owned)

	// Starting a spore that is starting starts nothing and asks for no
	// credentials. Session leaders are compared, not all marked processes:
	// the slow script forks its own sleep whenever it gets to it, while a
	// second bridge would lead a session of its own.
	leaders := func() []int {
		return liveProcesses(func(st procStat) bool {
			return st.Session == st.PID && hasEnv(st.PID, sporeenv.SporeID+"=slow")
		})
	}
	before := leaders()
	require.Len(t, before, 1)
	require.NoError(t, r.Start(ctx, spore("slow"), reconcile.Launch{Creds: noCredentials{t}}))
	require.Equal(t, before, leaders())

	open()
	require.NoError(t, r.WaitReady(ctx, "slow", 30*time.Second))
	po, ok = observe(t, r, "slow")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
}

// noCredentials fails the test if it is asked.
type noCredentials struct{ t *testing.T }

func (n noCredentials) Credentials(context.Context) (reconcile.Credentials, error) {
	n.t.Error("credentials asked for a spore that is already running")
	return reconcile.Credentials{}, fmt.Errorf("not to be asked")
}

// TestStartingExpires: a live bridge that has not answered StartTimeout
// after its start is Running and not ready (observed Down), and WaitReady
// gives up after its timeout, naming the log.
func TestStartingExpires(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	bin, open := gatedBridge(t)
	r.cfg.Binary = bin
	r.cfg.StartTimeout = 300 * time.Millisecond
	t.Cleanup(func() { _ = r.Delete(ctx, "late", true) })
	require.NoError(t, r.Start(ctx, spore("late"), reconcile.Launch{Creds: creds}))

	// The caller's context ends the wait with its own error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, r.WaitReady(cctx, "late", 10*time.Second), context.Canceled)

	err := r.WaitReady(ctx, "late", 200*time.Millisecond)
	require.ErrorContains(t, err, "not healthy after 200ms")
	require.ErrorContains(t, err, filepath.Join("run", "late.log"))

	time.Sleep(150 * time.Millisecond) // past StartTimeout since the start
	po, ok := observe(t, r, "late")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.False(t, po.Ready)

	open()
	require.NoError(t, r.WaitReady(ctx, "late", 30*time.Second))
	po, _ = observe(t, r, "late")
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)

	require.NoError(t, r.Stop(ctx, "late"))
	require.ErrorIs(t, r.WaitReady(ctx, "late", time.Second), state.ErrNotFound, "no run file: not running")
}

// TestStartingUsesTheRunFile: whether a bridge is still starting is read
// from its run file's start time, not remembered.
func TestStartingUsesTheRunFile(t *testing.T) {
	r := newRuntime(t, "echo")
	now := time.Now()
	for _, c := range []struct {
		started time.Time
		want    bool
	}{
		{now.Add(-time.Second), true},
		{now.Add(-r.cfg.StartTimeout), false},
		{now.Add(time.Hour), false}, // the clock went back
		{time.Time{}, false},
	} {
		require.Equal(t, c.want, r.starting(&runFile{Started: c.started}, now), "started %v", c.started)
	}
}

// TestBridgeExitsAtOnce: Start succeeds for a bridge that exits at once;
// the next Observe sees it Failed (Exited) and WaitReady reports the exit
// and the log.
func TestBridgeExitsAtOnce(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	r.cfg.Binary = script(t, "broken-sporectl", "echo 'bridge: cannot bind' >&2\nexit 3\n")
	t.Cleanup(func() { _ = r.Delete(ctx, "broken", true) })
	require.NoError(t, r.Start(ctx, spore("broken"), reconcile.Launch{Creds: creds}))

	require.Eventually(t, func() bool {
		po, ok := observe(t, r, "broken")
		return ok && po.State == reconcile.PodFailed && po.Reason == "Exited" && !po.Ready
	}, 5*time.Second, 10*time.Millisecond, "a bridge that exited is Failed (Exited)")

	err := r.WaitReady(ctx, "broken", 5*time.Second)
	require.ErrorContains(t, err, "exited")
	require.ErrorContains(t, err, filepath.Join("run", "broken.log"))
	var logs strings.Builder
	require.NoError(t, r.Logs(ctx, "broken", reconcile.LogOptions{}, &logs))
	require.Contains(t, logs.String(), "cannot bind")
	require.Empty(t, marked("broken"), "no process is left of it")
}

const starterRootEnv = "LOCAL_TEST_STARTER_ROOT"

// starter runs in a child of the test: it starts spore "orphan" (or
// $LOCAL_TEST_STARTER_ID) and exits at once, as a CLI does after `wake`.
// With $LOCAL_TEST_STARTER_DIE it is SIGKILLed at that failpoint of Start.
func starter(root string) {
	id := cmp.Or(os.Getenv("LOCAL_TEST_STARTER_ID"), "orphan")
	if die := os.Getenv("LOCAL_TEST_STARTER_DIE"); die != "" {
		failpoint = func(name string) {
			if name == die {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	r, err := New(Config{Root: root, Binary: os.Getenv("LOCAL_TEST_STARTER_BIN"), Agent: "echo"})
	if err == nil {
		err = r.Start(context.Background(), spore(id), reconcile.Launch{Creds: creds})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestBridgeOutlivesStarter: the process that called Start may exit right
// after it; the bridge, in its own session, carries on and becomes ready.
func TestBridgeOutlivesStarter(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "orphan", true) })
	bin, open := gatedBridge(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), starterRootEnv+"="+r.cfg.Root, "LOCAL_TEST_STARTER_BIN="+bin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	open() // the starter is gone before its bridge runs

	require.NoError(t, r.WaitReady(ctx, "orphan", 30*time.Second))
	po, ok := observe(t, r, "orphan")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
	rf, err := readRunFile(r.runPath("orphan", ".json"))
	require.NoError(t, err)
	st, err := readProcStat(rf.PID)
	require.NoError(t, err)
	require.Equal(t, rf.PID, st.Session, "the bridge leads its own session")
	require.NoError(t, r.Stop(ctx, "orphan"))
	require.Empty(t, marked("orphan"))
}

// A spore knows where serve is and who it is, and has its own commands on
// its PATH: `mycologist` and `swarm` are links to the sporectl binary.
func TestSporeEnvironmentForServe(t *testing.T) {
	ctx := context.Background()
	r, err := New(Config{Root: t.TempDir(), Binary: sporectlBin, Agent: "echo", APIURL: "http://127.0.0.1:7070", StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Delete(ctx, "env", true) })
	identity := "You are spore env.\nCommands you may run: none."
	require.NoError(t, r.Start(ctx, spore("env"), reconcile.Launch{Identity: identity, Creds: creds}))
	waitReady(t, r, "env")
	rf, err := readRunFile(r.runPath("env", ".json"))
	require.NoError(t, err)
	env, err := environ(rf.PID)
	require.NoError(t, err)
	vars := strings.Split(string(env), "\x00")
	require.Contains(t, vars, "SPORECTL_API_URL=http://127.0.0.1:7070")
	require.Contains(t, vars, "SPORECTL_SPORE_ID=env")
	require.Contains(t, vars, "SPORECTL_IDENTITY="+identity, "the identity the start was given, as it was given")
	bin := filepath.Join(r.cfg.Root, "bin")
	var path string
	for _, v := range vars {
		if p, ok := strings.CutPrefix(v, "PATH="); ok {
			path = p
		}
	}
	require.True(t, strings.HasPrefix(path, bin+":"), "PATH=%s", path)
	for _, name := range []string{"mycologist", "swarm"} {
		target, err := os.Readlink(filepath.Join(bin, name))
		require.NoError(t, err)
		require.Equal(t, sporectlBin, target)
	}
}
