package server

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/fakeapi"
)

// recordingClaude is agent.Claude, its turns' pids recorded.
type recordingClaude struct {
	*agent.Claude
	mu   sync.Mutex
	pids []int
}

func (r *recordingClaude) Start(ctx context.Context, t agent.Turn) (agent.Process, error) {
	p, err := r.Claude.Start(ctx, t)
	if err == nil {
		r.mu.Lock()
		r.pids = append(r.pids, p.PID())
		r.mu.Unlock()
	}
	return p, err
}

func (r *recordingClaude) turnPIDs() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.pids...)
}

func (h *harness) claude() *recordingClaude { return h.srv.cfg.Agent.(*recordingClaude) }

// waitPrepared waits for a process to wait for the next prompt, other
// than not, and returns its pid.
func (h *harness) waitPrepared(not int) int {
	h.t.Helper()
	var pid int
	require.Eventually(h.t, func() bool { pid = h.claude().PreparedPID(); return pid != 0 && pid != not }, 30*time.Second, 10*time.Millisecond,
		"a process waits for the next prompt")
	return pid
}

// reaped: the process is not there any more, not even as a zombie.
func reaped(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

// TestPrestartedAgentRunsTheTurnsAndIsGoneAtShutdown: the bridge starts
// the first turn's Claude Code as it starts (a wake), the first prompt
// runs on it; the next turn's, started when that turn ends, resumes the
// session; the bridge's shutdown leaves none.
func TestPrestartedAgentRunsTheTurnsAndIsGoneAtShutdown(t *testing.T) {
	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "first", Steps: []fakeapi.Reply{fakeapi.Text("first answer")}},
		fakeapi.Rule{Match: "second", Steps: []fakeapi.Reply{fakeapi.Text("second answer")}})
	h := startClaudeBridge(t, api)
	first := h.waitPrepared(0)
	st, err := h.client.Status(context.Background())
	require.NoError(t, err)
	require.Zero(t, st.AgentPID, "a waiting process is no turn's")
	require.Equal(t, bridge.StateIdle, st.State)

	h.prompt("p1", "the first prompt")
	evs := h.until(0, 60*time.Second, hasType("result", "", 1))
	require.Equal(t, []string{"first answer"}, resultText(evs))
	require.Equal(t, []int{first}, h.claude().turnPIDs(), "the turn ran on the process started with the bridge")

	second := h.waitPrepared(first)
	h.prompt("p2", "the second prompt")
	evs = h.until(0, 60*time.Second, hasType("result", "", 2))
	require.Equal(t, []string{"first answer", "second answer"}, resultText(evs))
	require.Equal(t, []int{first, second}, h.claude().turnPIDs())
	req, ok := api.LastRequestFor("second prompt")
	require.True(t, ok)
	require.True(t, req.Contains("the first prompt"), "the prestarted turn resumed the session")
	var resumes []bool
	for _, e := range evs {
		if lineField(e, "subtype") == "turn_started" {
			var l struct{ Resume bool }
			require.NoError(t, json.Unmarshal(e.Line, &l))
			resumes = append(resumes, l.Resume)
		}
	}
	require.Equal(t, []bool{false, true}, resumes, "created, then resumed")
	requireContiguous(t, evs, evs[0].Seq)

	third := h.waitPrepared(second)
	h.stop()
	require.Zero(t, h.claude().PreparedPID())
	require.True(t, reaped(third), "the bridge's shutdown ended and reaped the waiting Claude Code")
}

// TestInterruptLeavesNoWaitingAgent: a person's interrupt ends the
// process waiting for the next prompt as well as the turn, and none is
// started until a turn finishes again.
func TestInterruptLeavesNoWaitingAgent(t *testing.T) {
	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "slow task", Steps: []fakeapi.Reply{fakeapi.Slow(20*time.Second, "too late")}})
	h := startClaudeBridge(t, api)
	ctx := context.Background()

	waiting := h.waitPrepared(0)
	require.NoError(t, h.client.Interrupt(ctx), "nothing runs: answered all the same")
	require.Zero(t, h.claude().PreparedPID())
	require.True(t, reaped(waiting), "the waiting process is gone")

	h.prompt("slow", "do the slow task")
	st := h.waitStatus(30*time.Second, func(s bridge.Status) bool {
		_, asked := api.LastRequestFor("slow task")
		return s.State == bridge.StateWorking && s.AgentPID > 0 && asked
	})
	require.NoError(t, h.client.Interrupt(ctx))
	evs := h.until(0, 30*time.Second, hasType("bridge", "interrupted", 1))
	h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle })
	require.Eventually(t, func() bool { return reaped(st.AgentPID) }, 10*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return h.claude().PreparedPID() != 0 }, time.Second, 50*time.Millisecond,
		"no process waits after an interrupt")

	h.prompt("after", "and now something quick")
	h.until(evs[len(evs)-1].Seq, 60*time.Second, hasType("result", "", 1))
	h.waitPrepared(0)
}

// TestBridgeSIGTERMedLeavesNoAgent: `sporectl bridge` stopped by SIGTERM
// (a sleep, a pod deleted) ends the Claude Code waiting for the next
// prompt; a SIGKILLed one takes it along by Pdeathsig.
func TestBridgeSIGTERMedLeavesNoAgent(t *testing.T) {
	claude := fakeapi.ClaudeBin(t)
	apiSrv := fakeapi.New().Start()
	defer apiSrv.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			addr := freeAddr(t)
			p := startBridgeProcess(t, t.TempDir(), addr, claude, apiSrv.URL)
			var kids []int
			require.Eventually(t, func() bool { kids = children(p.cmd.Process.Pid); return len(kids) == 1 }, 30*time.Second, 20*time.Millisecond,
				"the bridge started its Claude Code before any prompt")
			require.NoError(t, p.cmd.Process.Signal(sig))
			<-p.done
			require.Eventually(t, func() bool { return !alive(kids[0]) }, 10*time.Second, 20*time.Millisecond, "no Claude Code left behind")
		})
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so after the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
