package local

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/eventlog"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// health is what status says of spore id, observed through the runtime
// and its bridge as a pass does, with the store knowing ids.
func health(t *testing.T, r *Runtime, id string, desired state.Desired, known ...string) (reconcile.Observed, reconcile.Verdict, []string) {
	t.Helper()
	obs, orphans, err := reconcile.Observe(context.Background(), r, known)
	require.NoError(t, err)
	o, ok := obs[id]
	if !ok {
		o = reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown}
	}
	return o, reconcile.Health(desired, o, false), orphans
}

// bridgePIDs are the marked processes of id running its bridge command.
func bridgePIDs(r *Runtime, id string) []int {
	var out []int
	if t := markedFleet(r.home)[id]; t != nil {
		for _, b := range t.Bridges {
			out = append(out, b.PID)
		}
	}
	return out
}

// TestWakeKilledBeforeRecording: a wake SIGKILLed after it spawned the
// bridge and before it wrote the run file leaves a bridge that holds the
// home and, soon, listens. It is observed by its mark — never Dead
// "nothing running": Pending while young and not answering, then Running
// and not ready (Suspect), and once it answers at the address on its
// command line, Running and ready: the spore's bridge, Healthy, reachable
// with the token in the home. Asleep it is Diverged (the pass stops it);
// for an id the store does not know it is an orphan. Start ends it before
// it starts a recorded one.
func TestWakeKilledBeforeRecording(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "cut", true) })
	bin, open := gatedBridge(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), starterRootEnv+"="+r.cfg.Root, "LOCAL_TEST_STARTER_BIN="+bin,
		"LOCAL_TEST_STARTER_ID=cut", "LOCAL_TEST_STARTER_DIE=spawned")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "the starter died at the failpoint")
	require.NoFileExists(t, r.runPath("cut", ".json"), "killed before it recorded the bridge")
	require.Eventually(t, func() bool { return len(bridgePIDs(r, "cut")) == 1 }, 10*time.Second, 10*time.Millisecond)
	orphan := bridgePIDs(r, "cut")[0]

	// Young and not answering yet: a wake may be recording it right now.
	po, ok := observe(t, r, "cut")
	require.True(t, ok, "a running bridge without a run file is observed")
	require.Equal(t, reconcile.PodPending, po.State)
	require.False(t, po.Ready)

	// Older, still not answering: running, not ready — Suspect, not Dead.
	r.cfg.StartTimeout = 100 * time.Millisecond
	time.Sleep(150 * time.Millisecond)
	po, ok = observe(t, r, "cut")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.False(t, po.Ready)
	require.Equal(t, 1, po.Count)
	require.True(t, po.Owned)
	o, v, _ := health(t, r, "cut", state.Running, "cut")
	require.Equal(t, reconcile.PodRunning, o.Pod)
	require.Equal(t, reconcile.BridgeDown, o.Bridge)
	require.Equal(t, policy.Suspect, v.Effective)
	require.Equal(t, reconcile.ReasonBridgeNotAnswer, v.Code)

	// Answering: the spore's bridge, found where its command line says.
	open()
	require.NoError(t, r.WaitReady(ctx, "cut", 30*time.Second))
	po, _ = observe(t, r, "cut")
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
	o, v, orphans := health(t, r, "cut", state.Running, "cut")
	require.Equal(t, reconcile.BridgeUp, o.Bridge)
	require.Equal(t, policy.Healthy, v.Effective, "%+v", v)
	require.Empty(t, orphans)
	_, v, _ = health(t, r, "cut", state.Paused, "cut")
	require.Equal(t, policy.Diverged, v.Effective, "it runs while asleep: the pass stops it")
	require.Equal(t, reconcile.ReasonRunsWhileAsleep, v.Code)
	_, _, orphans = health(t, r, "cut", state.Running, "someone-else")
	require.Equal(t, []string{"cut"}, orphans, "a marked bridge of an id the store does not know is an orphan")

	// Start ends it (it holds the home's lock) and records a new one.
	require.NoError(t, r.Start(ctx, spore("cut"), reconcile.Launch{Creds: creds}))
	require.True(t, syscall.Kill(orphan, 0) != nil || isZombie(orphan), "the unrecorded bridge was ended")
	waitReady(t, r, "cut")
	rf, err := readRunFile(r.runPath("cut", ".json"))
	require.NoError(t, err)
	require.True(t, r.verified("cut", rf))
	po, _ = observe(t, r, "cut")
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready)
	require.Equal(t, 1, po.Count)
	require.NoError(t, r.Stop(ctx, "cut"))
	require.Empty(t, marked("cut"))
}

// TestBadRunFileObservedByMark: a live bridge whose run file is damaged,
// names a process that is gone, or was removed, is still the spore's
// bridge: found by its mark, asked at the address on its command line,
// Healthy; Stop ends it.
func TestBadRunFileObservedByMark(t *testing.T) {
	ctx := context.Background()
	for name, bad := range map[string]func(r *Runtime, id string){
		"damaged": func(r *Runtime, id string) {
			require.NoError(t, os.WriteFile(r.runPath(id, ".json"), []byte(`{"pid": 12`), 0o600))
		},
		"stale": func(r *Runtime, id string) {
			rf, err := readRunFile(r.runPath(id, ".json"))
			require.NoError(t, err)
			rf.StartTime++ // another process than the bridge
			require.NoError(t, writeRunFile(r.runPath(id, ".json"), rf))
		},
		"removed": func(r *Runtime, id string) { require.NoError(t, os.Remove(r.runPath(id, ".json"))) },
	} {
		t.Run(name, func(t *testing.T) {
			r := newRuntime(t, "echo")
			id := "bad-" + name
			t.Cleanup(func() { _ = r.Delete(ctx, id, true) })
			require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Creds: creds}))
			waitReady(t, r, id)
			rf, err := readRunFile(r.runPath(id, ".json"))
			require.NoError(t, err)
			bad(r, id)
			po, ok := observe(t, r, id)
			require.True(t, ok)
			require.Equal(t, reconcile.PodRunning, po.State)
			require.True(t, po.Ready)
			ep, err := r.Bridge(ctx, id)
			require.NoError(t, err)
			require.Equal(t, "http://"+rf.Addr, ep.BaseURL)
			_, v, _ := health(t, r, id, state.Running, id)
			require.Equal(t, policy.Healthy, v.Effective, "%+v", v)
			require.NoError(t, r.Stop(ctx, id))
			require.Empty(t, marked(id))
			_, ok = observe(t, r, id)
			require.False(t, ok)
		})
	}
}

// TestLeftoversWithoutRunFile: marked processes that are not a bridge (a
// tool a dead bridge left) with no run file are Failed (Exited), not
// absent, and an orphan for an id the store does not know; a process with
// the id but another home is not the spore's.
func TestLeftoversWithoutRunFile(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	spawn := func(id, home string) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Env = []string{"HOME=" + home, sporeenv.SporeID + "=" + id}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	spawn("elsewhere", t.TempDir())
	_, ok := observe(t, r, "elsewhere")
	require.False(t, ok, "the id alone is not the mark")

	tool := spawn("left", r.home("left"))
	po, ok := observe(t, r, "left")
	require.True(t, ok)
	require.Equal(t, reconcile.PodFailed, po.State)
	require.Equal(t, "Exited", po.Reason)
	_, v, _ := health(t, r, "left", state.Running, "left")
	require.Equal(t, policy.Dead, v.Effective)
	require.Equal(t, reconcile.ReasonExited, v.Code, "not \"nothing running\"")
	_, _, orphans := health(t, r, "left", state.Running)
	require.Equal(t, []string{"left"}, orphans)

	require.NoError(t, r.Stop(ctx, "left"))
	require.True(t, isZombie(tool.Process.Pid), "stop ended the leftover")
	_, ok = observe(t, r, "left")
	require.False(t, ok)
}

func isZombie(pid int) bool {
	st, err := readProcStat(pid)
	return err == nil && st.State == 'Z'
}

// TestObserveScansProcOnce: Observe reads each process's environment once
// for the whole fleet, not once per spore.
func TestObserveScansProcOnce(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	for _, id := range []string{"one", "two", "three"} {
		t.Cleanup(func() { _ = r.Delete(ctx, id, true) })
		require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Creds: creds}))
	}
	scans := 0
	old := scanHook
	scanHook = func() { scans++ }
	t.Cleanup(func() { scanHook = old })
	obs, err := r.Observe(ctx, nil)
	require.NoError(t, err)
	require.Len(t, obs.Spores, 3)
	require.Equal(t, 1, scans)
}

// hostsAsked records the host of every request sent through it.
type hostsAsked struct {
	mu    sync.Mutex
	hosts []string
	next  http.RoundTripper
}

func (h *hostsAsked) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hosts = append(h.hosts, req.URL.Host)
	h.mu.Unlock()
	return h.next.RoundTrip(req)
}

// TestObserveNamedAsksTheNamedOnly: Observe of named spores reports those
// alone, as the whole observation does, and asks no other spore's bridge
// for /healthz; unnamed it asks every one.
func TestObserveNamedAsksTheNamedOnly(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	ids := []string{"one", "two", "three"}
	for _, id := range ids {
		t.Cleanup(func() { _ = r.Delete(ctx, id, true) })
		require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Creds: creds}))
	}
	asked := &hostsAsked{next: http.DefaultTransport}
	r.cfg.HTTPClient = &http.Client{Transport: asked, Timeout: 2 * time.Second}
	addrOf := func(id string) string {
		rf, err := readRunFile(r.runPath(id, ".json"))
		require.NoError(t, err)
		return rf.Addr
	}
	take := func() []string {
		asked.mu.Lock()
		defer asked.mu.Unlock()
		out := asked.hosts
		asked.hosts = nil
		slices.Sort(out)
		return out
	}

	// The bridges come up in their own time: wait until each is ready,
	// so that the two observations below see the same fleet (a bridge
	// still starting for the first and answering for the second made
	// them differ under load).
	require.Eventually(t, func() bool {
		o, err := r.Observe(ctx, nil)
		if err != nil {
			return false
		}
		for _, id := range ids {
			if !o.Spores[id].Ready {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "every bridge answers")
	take()

	want := []string{addrOf("one"), addrOf("two"), addrOf("three")}
	slices.Sort(want)
	// Which bridges are asked is exact on every try. What each answers is
	// a probe with a deadline (runtime.answers) that a loaded machine can
	// miss for one observation and not the next; so the two observations
	// are compared until a pair agrees, rather than once.
	var whole, named reconcile.FleetObservation
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		whole, err = r.Observe(ctx, nil)
		require.NoError(t, err)
		require.Len(t, whole.Spores, 3)
		require.Equal(t, want, take())

		named, err = r.Observe(ctx, []string{"two", "never-made"})
		require.NoError(t, err)
		require.Equal(t, []string{addrOf("two")}, take(), "no other bridge is asked")
		if reflect.DeepEqual(map[string]reconcile.PodObservation{"two": whole.Spores["two"]}, named.Spores) || time.Now().After(deadline) {
			break
		}
		t.Logf("the two observations differ, looking again: %+v, %+v", whole.Spores["two"], named.Spores)
	}
	require.Equal(t, map[string]reconcile.PodObservation{"two": whole.Spores["two"]}, named.Spores)
}

const fullDiskBridgeEnv = "LOCAL_TEST_FULL_DISK_BRIDGE"

// fullDiskBridge runs in a child of the test as the spore's bridge: the
// real bridge server, with every append to its log failing as on a full
// disk (the fault its own tests inject).
func fullDiskBridge(args []string) int {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	home := fs.String("home", "", "")
	fs.String("agent", "", "")
	if len(args) == 0 || args[0] != "bridge" || fs.Parse(args[1:]) != nil {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	token, err := server.LoadToken(*home, os.Getenv(sporeenv.BridgeToken))
	if err != nil {
		logger.Error("full-disk bridge", "err", err)
		return 1
	}
	s, err := server.New(ctx, server.Config{Home: *home, Token: token, Agent: agent.Echo{}, Logger: logger})
	if err != nil {
		logger.Error("full-disk bridge", "err", err)
		return 1
	}
	eventlog.InjectFault(func(string) error { return syscall.ENOSPC })
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Error("full-disk bridge", "err", err)
		return 1
	}
	_ = s.Run(ctx, ln)
	return 0
}

// TestFullDiskIsReadyAndUnhealthy: a bridge that cannot append to its log
// answers /healthz 503; it is serving, so the local runtime observes it
// ready, the pass asks its status (healthy: false), and the spore is
// Suspect/BridgeUnhealthy, "the bridge cannot append to its log", as
// docs/health.md says — not "bridge not answering".
func TestFullDiskIsReadyAndUnhealthy(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo", fullDiskBridgeEnv+"=1")
	r.cfg.Binary = os.Args[0]
	t.Cleanup(func() { _ = r.Delete(ctx, "full", true) })
	require.NoError(t, r.Start(ctx, spore("full"), reconcile.Launch{Creds: creds}))
	require.NoError(t, r.WaitReady(ctx, "full", 30*time.Second), "a bridge answering 503 serves")
	ep, err := r.Bridge(ctx, "full")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := ep.Client.Get(ep.BaseURL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 503
	}, 10*time.Second, 20*time.Millisecond, "the bridge never found its disk full")
	resp, err := ep.Client.Get(ep.BaseURL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "/readyz (the kube readiness probe) must stay 200 on a full disk")

	po, ok := observe(t, r, "full")
	require.True(t, ok)
	require.Equal(t, reconcile.PodRunning, po.State)
	require.True(t, po.Ready, "/healthz 503 is a bridge that serves")

	o, v, _ := health(t, r, "full", state.Running, "full")
	require.Equal(t, reconcile.BridgeUp, o.Bridge)
	require.Equal(t, reconcile.ReasonBridgeUnhealthy, o.Reason)
	require.Equal(t, policy.Suspect, v.Effective)
	require.Equal(t, reconcile.ReasonBridgeUnhealthy, v.Code)
	require.Equal(t, "the bridge cannot append to its log", v.Text)
}
