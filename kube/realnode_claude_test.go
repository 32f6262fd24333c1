package kube_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// claudeRetryNote is what the bridge puts before a prompt whose turn died
// (bridge/server), so the fake answers the retry and not the cut-off step.
const claudeRetryNote = "stopped before finishing this prompt"

// The recovery table (docs/recovery.md) on real containers: the real spore
// image (Claude Code, the sporectl bridge) on a one-node Kubernetes, run
// by the kube.Runtime sporectl uses with its default agent, Claude Code,
// against the fake Messages API listening on the node's bridge address.
// The model's endpoint and a fake key reach the pod through the
// kube.ModelSecret Secret. One node for every step, in order: each step
// starts from where the one before left the spore.
func TestRealNodeClaude(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()

	api := fakeapi.New()
	api.Script(
		fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello from the fake model")}},
		fakeapi.Rule{Match: "what did I ask", Steps: []fakeapi.Reply{fakeapi.Text("you asked me to say hello")}},
		fakeapi.Rule{Match: "think slowly", Steps: []fakeapi.Reply{fakeapi.Slow(5*time.Minute, "too late")}},
		// A tool that outgrows the spore's memory limit: the kernel's
		// cgroup OOM killer kills the biggest process of the container,
		// which is this pipeline's tail.
		fakeapi.Rule{Match: "fill the memory", Steps: []fakeapi.Reply{
			fakeapi.Bash("head -c 3G /dev/zero | tail; echo \"pipeline exit $?\""), fakeapi.Text("the tool was killed")}},
		// The same, after making the bridge (the container's PID 1, same
		// user) the kernel's first choice: the whole container is then
		// OOMKilled, as when the bridge itself outgrows the limit.
		fakeapi.Rule{Match: "sink the spore", Steps: []fakeapi.Reply{
			fakeapi.Bash("echo 1000 > /proc/1/oom_score_adj && head -c 3G /dev/zero | tail"), fakeapi.Text("never seen")}},
		fakeapi.Rule{Match: claudeRetryNote, Steps: []fakeapi.Reply{fakeapi.Text("carried on after it died")}},
		fakeapi.Rule{Match: "still there", Steps: []fakeapi.Reply{fakeapi.Text("still here")}},
	)
	model := serveOn(t, n.IP, api)

	archive := imagestest.Spore(t)
	if fi, err := os.Stat(archive); err == nil {
		t.Logf("spore image archive: %d MiB", fi.Size()>>20)
	}
	began := time.Now()
	require.NoError(t, n.ImportImage(ctx, archive))
	t.Logf("spore image imported in %s", time.Since(began).Round(10*time.Millisecond))

	// The model's endpoint and a fake key, as an operator would give them.
	modelEnv := map[string]string{}
	for _, kv := range fakeapi.ClaudeEnv(model) {
		k, v, _ := strings.Cut(kv, "=")
		modelEnv[k] = v
	}
	_, err := n.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kube.ModelSecret}, StringData: modelEnv}, metav1.CreateOptions{})
	require.NoError(t, err)

	vols := n.LocalVolumes(t, 1, "2Gi")
	rt, err := kube.New(n.Config, kube.Options{Namespace: ns}) // the default agent: Claude Code
	require.NoError(t, err)
	s := spore("claude1")
	s.Spec = state.Spec{Image: images.SporeName, CPU: "1", Memory: "1Gi", Storage: "2Gi"}
	launch := reconcile.Launch{Identity: "You are spore claude1.", Creds: creds("claude1")}
	pod := kube.ObjectName(s.ID)
	ds, _, err := dirstore.Init(ctx, filepath.Join(t.TempDir(), "store"), state.Settings{Runtime: "kube"}, dirstore.Options{})
	require.NoError(t, err)
	require.NoError(t, ds.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, s) }))
	pass := reconciletest.NewPass(t, ds, reconciletest.WithRuntime(rt), reconciletest.RealClock())

	var session string // the Claude session every step must keep
	var last uint64    // the bridge's last line seen so far

	step := func(name string, fn func(t *testing.T)) {
		require.True(t, t.Run(name, fn), "each step needs the one before")
	}

	step("wake, and a prompt answered by the model through the pod proxy", func(t *testing.T) {
		began := time.Now()
		require.NoError(t, rt.Start(ctx, s, launch))
		waitHealthy(t, rt, s.ID)
		t.Logf("spore (Claude Code) Healthy %s after Start", time.Since(began).Round(10*time.Millisecond))
		st, err := bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, "claude", st.Agent)

		began = time.Now()
		last = claudeTurn(t, rt, s.ID, "c1", "please say hello", "hello from the fake model", last)
		t.Logf("first turn answered %s after the prompt", time.Since(began).Round(10*time.Millisecond))
		st, err = bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		session = st.SessionID
		require.NotEmpty(t, session)
		_, asked := api.LastRequestFor("say hello")
		assert.True(t, asked, "the pod's Claude Code reached the fake model at %s", model)
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID), "Claude ran on the bridge's session")
	})

	step("sleep and wake on the same home: the same Claude session resumes", func(t *testing.T) {
		require.NoError(t, rt.Stop(ctx, s.ID))
		waitPodGone(t, n, ns, pod)
		began := time.Now()
		require.NoError(t, rt.Start(ctx, s, launch))
		waitHealthy(t, rt, s.ID)
		t.Logf("spore (Claude Code) Healthy %s after wake", time.Since(began).Round(10*time.Millisecond))
		st, err := bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, session, st.SessionID, "the session kept in the home")
		last = claudeTurn(t, rt, s.ID, "c2", "what did I ask before?", "you asked me to say hello", last)
		req, ok := api.LastRequestFor("what did I ask")
		require.True(t, ok)
		assert.True(t, req.Contains("please say hello"), "Claude resumed the session: the model sees the turn before the sleep")
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID))
	})

	step("Claude Code killed in the container: the bridge restarts it on the same session", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		restartsBefore := p.Status.ContainerStatuses[0].RestartCount
		c := bridgeClient(t, rt, s.ID)
		_, err := c.Prompt(ctx, bridge.PromptRequest{ID: "c3", From: "operator", Text: "think slowly"})
		require.NoError(t, err)
		var st bridge.Status
		require.Eventually(t, func() bool {
			st, err = c.Status(ctx)
			_, asked := api.LastRequestFor("think slowly")
			return err == nil && st.State == bridge.StateWorking && st.AgentPID > 0 && asked
		}, 90*time.Second, 100*time.Millisecond, "the slow turn never reached the model")
		agent := hostPIDOf(t, p.Status.ContainerStatuses[0].ContainerID, st.AgentPID)
		require.NoError(t, syscall.Kill(agent.PID, syscall.SIGKILL), "kill Claude Code (%s), host pid %d, pid %d in the container", agent.Comm, agent.PID, agent.NSPID)

		last = claudeTurn(t, rt, s.ID, "", claudeRetryNote, "carried on after it died", last)
		after, err := c.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, after.AgentRestarts, "the bridge restarted Claude Code once")
		assert.Equal(t, session, after.SessionID)
		o := waitHealthy(t, rt, s.ID)
		assert.Equal(t, int(restartsBefore), o.Restarts, "the container itself never restarted")
		assert.Equal(t, p.UID, getPod(t, n, ns, pod).UID, "the same pod")
		req, ok := api.LastRequestFor(claudeRetryNote)
		require.True(t, ok)
		assert.True(t, req.Contains("please say hello"), "the retry resumed the session with its history")
	})

	step("the container SIGKILLed: the kubelet restarts it, the restart counted, the session kept", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		restartsBefore := p.Status.ContainerStatuses[0].RestartCount
		bridgeProc := hostPIDOf(t, p.Status.ContainerStatuses[0].ContainerID, 1)
		require.NoError(t, syscall.Kill(bridgeProc.PID, syscall.SIGKILL))
		got := waitPod(t, n, ns, pod, "restarted and Ready", func(p *corev1.Pod) bool {
			return p.Status.ContainerStatuses[0].RestartCount > restartsBefore && podReady(p)
		})
		term := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
		require.NotNil(t, term)
		assert.EqualValues(t, 137, term.ExitCode)
		o := waitHealthy(t, rt, s.ID)
		assert.Equal(t, int(restartsBefore)+1, o.Restarts, "the restart is counted in observation")
		last = claudeTurn(t, rt, s.ID, "c4", "are you still there?", "still here", last)
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID))
	})

	// Claude Code's Bash tool needs a person's approval under the bridge's
	// acceptEdits mode; the home's own settings allow it, as an operator
	// who trusts the spore's tools would.
	allowBash(t, n.VolumePath(t, vols[0]))

	step("a tool outgrows the memory limit: the kernel kills the tool, the spore runs on", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		restartsBefore := p.Status.ContainerStatuses[0].RestartCount
		killsBefore := oomKills(t)
		from := last
		last = claudeTurn(t, rt, s.ID, "c5", "fill the memory", "the tool was killed", last)
		killed := strings.Join(newOOMKills(t, killsBefore, "(tail)"), ", ")
		assert.Contains(t, killed, "(tail)", "the kernel killed the biggest process of the container")
		assert.NotContains(t, killed, "(sporectl)", "and not the bridge")
		results := toolResults(bridgeLines(t, rt, s.ID), from)
		assert.True(t, anyLine(results, "pipeline exit 137"), "the tool's pipeline was SIGKILLed by the OOM killer: %s", linesText(results))
		o := waitHealthy(t, rt, s.ID)
		assert.Equal(t, int(restartsBefore), o.Restarts, "the container was not OOMKilled")
		assert.Equal(t, p.UID, getPod(t, n, ns, pod).UID)
	})

	step("the container OOMKilled by the kernel: observed OOMKilled, restarted on the same home and session", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		restartsBefore := p.Status.ContainerStatuses[0].RestartCount
		bridgeProc := hostPIDOf(t, p.Status.ContainerStatuses[0].ContainerID, 1)
		killsBefore := oomKills(t)
		c := bridgeClient(t, rt, s.ID)
		_, err := c.Prompt(ctx, bridge.PromptRequest{ID: "c6", From: "operator", Text: "sink the spore"})
		require.NoError(t, err)

		// Until the kubelet has it running again, nobody may call it
		// Healthy; what it says then names the OOM kill.
		var sawOOM bool
		got := waitPod(t, n, ns, pod, "OOMKilled and restarted", func(p *corev1.Pod) bool {
			obs, _, err := reconcile.Observe(ctx, rt, []string{s.ID})
			if err == nil {
				v := reconcile.Health(state.Running, obs[s.ID], false)
				if obs[s.ID].LastTermination == "OOMKilled" {
					if !sawOOM {
						t.Logf("first observed after the kill: %s (%s), restarts %d", v.Effective, v.Text, obs[s.ID].Restarts)
					}
					sawOOM = true
					// Judge by the restart count this observation read:
					// p was read before it, and a bridge that answers
					// while its container is still coming up is Up as soon
					// as the kubelet has restarted it.
					if obs[s.ID].Restarts == int(restartsBefore) {
						assert.NotEqual(t, policy.Healthy, v.Effective, "the bridge is dead: %+v", obs[s.ID])
					}
				}
			}
			return p.Status.ContainerStatuses[0].RestartCount > restartsBefore && podReady(p)
		})
		term := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
		require.NotNil(t, term)
		assert.Equal(t, "OOMKilled", term.Reason, "the kernel's OOM killer, as the kubelet reports it")
		assert.EqualValues(t, 137, term.ExitCode)
		assert.True(t, sawOOM, "the observation named the OOM kill")
		bridgeKill := fmt.Sprintf("%d (sporectl)", bridgeProc.PID)
		assert.Contains(t, newOOMKills(t, killsBefore, bridgeKill), bridgeKill, "the kernel killed the bridge")
		o := waitHealthy(t, rt, s.ID)
		assert.Equal(t, int(restartsBefore)+1, o.Restarts, "the restart is counted")
		assert.Equal(t, reconcile.Reason("OOMKilled"), o.LastTermination)
		assert.Equal(t, p.UID, got.UID, "restartPolicy Always: the kubelet restarts it in the same pod")
		// The restarted bridge runs the cut-off prompt again on the same
		// session (its queue journal is in the home).
		last = claudeTurn(t, rt, s.ID, "", claudeRetryNote, "carried on after it died", last)
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID))
	})

	step("the pod deleted by someone else: Dead, a healing pass makes a new pod on the same home", func(t *testing.T) {
		old := getPod(t, n, ns, pod)
		deletePodAndWait(t, n, ns, pod)
		obs, _, err := reconcile.Observe(ctx, rt, []string{s.ID})
		require.NoError(t, err)
		assert.Equal(t, policy.Dead, reconcile.Health(state.Running, obs[s.ID], false).Effective)
		healPass(t, pass, s.ID)
		waitHealthy(t, rt, s.ID)
		assert.NotEqual(t, old.UID, getPod(t, n, ns, pod).UID, "a new pod")
		last = claudeTurn(t, rt, s.ID, "c7", "are you still there now?", "still here", last)
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID), "the same Claude session in the new pod")
	})

	step("the kubelet stopped: the node goes NotReady and the spore is not Healthy; back, Healthy", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		bridgeProc := hostPIDOf(t, p.Status.ContainerStatuses[0].ContainerID, 1)
		require.NoError(t, n.StopKubelet())
		began := time.Now()
		deadline := began.Add(3 * time.Minute)
		for {
			st, err := n.NodeReady(ctx)
			require.NoError(t, err)
			if st != corev1.ConditionTrue {
				t.Logf("node Ready=%s %s after the kubelet stopped", st, time.Since(began).Round(time.Second))
				break
			}
			require.True(t, time.Now().Before(deadline), "the node still Ready 3 min after its kubelet stopped")
			time.Sleep(time.Second)
		}
		// From the node's NotReady on, no observation may say Healthy
		// (allowing the controller one monitor period to mark its pods).
		notReady := time.Now()
		var v reconcile.Verdict
		for time.Since(notReady) < 20*time.Second {
			obs, _, err := reconcile.Observe(ctx, rt, []string{s.ID})
			require.NoError(t, err)
			v = reconcile.Health(state.Running, obs[s.ID], false)
			if time.Since(notReady) > 5*time.Second {
				require.NotEqual(t, policy.Healthy, v.Effective, "node NotReady %s ago: %+v", time.Since(notReady).Round(time.Second), obs[s.ID])
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("with the node NotReady the spore is %s (%s)", v.Effective, v.Text)
		assert.NotEqual(t, policy.Dead, v.Effective, "its container still runs: nothing to restart")
		assert.True(t, alive(bridgeProc.PID), "the container runs on without its kubelet")

		require.NoError(t, n.StartKubelet(ctx, 2*time.Minute))
		o := waitHealthy(t, rt, s.ID)
		t.Logf("Healthy %s after the kubelet started again", time.Since(notReady).Round(time.Second))
		assert.Equal(t, p.UID, getPod(t, n, ns, pod).UID, "the same pod")
		assert.Equal(t, int(p.Status.ContainerStatuses[0].RestartCount), o.Restarts, "the container was not restarted")
		last = claudeTurn(t, rt, s.ID, "c8", "still there after the kubelet?", "still here", last)
	})

	step("containerd restarted: the containers run on under their shims, the spore Healthy", func(t *testing.T) {
		p := getPod(t, n, ns, pod)
		bridgeProc := hostPIDOf(t, p.Status.ContainerStatuses[0].ContainerID, 1)
		before := n.PID("containerd")
		require.NoError(t, n.RestartContainerd(ctx))
		require.NotEqual(t, before, n.PID("containerd"), "a new containerd")
		assert.True(t, alive(bridgeProc.PID), "the bridge runs on while containerd restarts")
		o := waitHealthy(t, rt, s.ID)
		now := getPod(t, n, ns, pod)
		assert.Equal(t, p.UID, now.UID, "the same pod")
		assert.Equal(t, int(p.Status.ContainerStatuses[0].RestartCount), o.Restarts, "no container restart")
		assert.Equal(t, bridgeProc.PID, hostPIDOf(t, now.Status.ContainerStatuses[0].ContainerID, 1).PID, "the same bridge process")
		last = claudeTurn(t, rt, s.ID, "c9", "still there after containerd?", "still here", last)
		assert.Equal(t, []string{session}, claudeSessions(t, rt, s.ID))
	})
}

// serveOn serves h on addr's interface at a free port, for the pods (the
// node's bridge address is reachable from them), and returns its URL.
func serveOn(t *testing.T, addr string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func getPod(t *testing.T, n *kubetest.Node, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := n.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, p.Status.ContainerStatuses, 1)
	return p
}

// hostPIDOf is the host's view of the container's process whose PID in
// the container is nsPID.
func hostPIDOf(t *testing.T, containerID string, nsPID int) kubetest.HostProc {
	t.Helper()
	procs, err := kubetest.ContainerProcs(containerID)
	require.NoError(t, err)
	for _, p := range procs {
		if p.NSPID == nsPID {
			return p
		}
	}
	t.Fatalf("no process %d in container %s: %+v", nsPID, containerID, procs)
	return kubetest.HostProc{}
}

func oomKills(t *testing.T) []string {
	t.Helper()
	k, err := kubetest.OOMKills(t.Context())
	require.NoError(t, err)
	return k
}

// newOOMKills are the kernel's OOM kills that were not in before, waiting
// up to 10 s for one containing want. By set, not by count: the kernel's
// log is a ring, and the other node tests' network messages can push old
// kills out of it.
func newOOMKills(t *testing.T, before []string, want string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, k := range before {
		seen[k] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var fresh []string
		for _, k := range oomKills(t) {
			if !seen[k] {
				fresh = append(fresh, k)
			}
		}
		if strings.Contains(strings.Join(fresh, ", "), want) || time.Now().After(deadline) {
			return fresh
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// alive reports whether the host process pid still runs.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func healPass(t *testing.T, pass *reconcile.Pass, id string) {
	t.Helper()
	out, err := pass.Run(t.Context(), reconcile.Options{IDs: []string{id}, Heal: true})
	require.NoError(t, err)
	require.NoError(t, out.ObserveErr)
	require.Len(t, out.Plans, 1)
	require.True(t, out.Plans[0].Start, "the pass starts the dead spore: %+v", out.Plans[0].Verdict)
	require.NoError(t, out.Plans[0].StartErr)
}

// claudeTurn sends a prompt (none when promptID is empty: the bridge is
// running one again by itself) and waits for a Claude result line after
// seq after that holds want, and for the bridge to be idle. It returns the
// bridge's last line then.
func claudeTurn(t *testing.T, rt *kube.Runtime, id, promptID, text, want string, after uint64) uint64 {
	t.Helper()
	ctx := t.Context()
	c := bridgeClient(t, rt, id)
	if promptID != "" {
		_, err := c.Prompt(ctx, bridge.PromptRequest{ID: promptID, From: "operator", Text: text})
		require.NoError(t, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		evs, err := c.Events(ctx, after, bridge.MaxLimit, 0)
		if err == nil {
			for _, e := range evs.Events {
				if isResult(e.Line, want) {
					st, err := c.Status(ctx)
					if err == nil && st.State == bridge.StateIdle && st.Queue == 0 {
						return st.LastSeq
					}
				}
			}
		} else {
			// The bridge may be coming back (a restart in the step); a new
			// client reads the Secret and the pod again.
			c = bridgeClient(t, rt, id)
		}
		time.Sleep(300 * time.Millisecond)
	}
	evs, _ := c.Events(ctx, after, bridge.MaxLimit, 0)
	var lines []string
	for _, e := range evs.Events {
		lines = append(lines, string(e.Line))
	}
	t.Fatalf("no result %q after line %d in 2 min (prompt %q); lines:\n%s", want, after, text, strings.Join(lines, "\n"))
	return 0
}

func isResult(line json.RawMessage, want string) bool {
	var l struct {
		Type   string `json:"type"`
		Result string `json:"result"`
	}
	return json.Unmarshal(line, &l) == nil && l.Type == "result" && strings.Contains(l.Result, want)
}

func bridgeLines(t *testing.T, rt *kube.Runtime, id string) []bridge.Event {
	t.Helper()
	evs, err := bridgeClient(t, rt, id).Events(t.Context(), 0, bridge.MaxLimit, 0)
	require.NoError(t, err)
	return evs.Events
}

// toolResults are the lines after seq that carry a tool's result.
func toolResults(evs []bridge.Event, after uint64) []bridge.Event {
	var out []bridge.Event
	for _, e := range evs {
		if e.Seq > after && strings.Contains(string(e.Line), `"tool_result"`) {
			out = append(out, e)
		}
	}
	return out
}

func linesText(evs []bridge.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("\n")
		b.Write(e.Line)
	}
	return b.String()
}

func anyLine(evs []bridge.Event, s string) bool {
	for _, e := range evs {
		if strings.Contains(string(e.Line), s) {
			return true
		}
	}
	return false
}

// claudeSessions lists the distinct session ids of Claude's init lines.
func claudeSessions(t *testing.T, rt *kube.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, e := range bridgeLines(t, rt, id) {
		var l struct {
			Type    string `json:"type"`
			Subtype string `json:"subtype"`
			Session string `json:"session_id"`
		}
		if json.Unmarshal(e.Line, &l) == nil && l.Type == "system" && l.Subtype == "init" && !contains(out, l.Session) {
			out = append(out, l.Session)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// allowBash lets Claude Code run Bash in the spore's home: its user
// settings (~/.claude/settings.json), written on the host into the local
// volume, owned by the spore's user.
func allowBash(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".claude")
	require.DirExists(t, dir, "Claude Code made its directory in the home")
	p := filepath.Join(dir, "settings.json")
	_, err := os.Stat(p)
	require.True(t, os.IsNotExist(err), "no settings of Claude Code's own to keep (%v)", err)
	require.NoError(t, os.WriteFile(p, []byte(`{"permissions":{"allow":["Bash"]}}`+"\n"), 0o644))
	require.NoError(t, os.Chown(p, kube.SporeUID, kube.SporeUID))
}
