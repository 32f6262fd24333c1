package server

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// bridgeProcess is a bridge running as its own process (this test binary
// re-executed), so it can be SIGKILLed.
type bridgeProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startBridgeProcess(t *testing.T, home, addr, claude, apiURL string) *bridgeProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperHomeEnv+"="+home, helperAddrEnv+"="+addr,
		helperClaudeEnv+"="+claude, sporeenv.BridgeToken+"="+testToken)
	cmd.Env = append(cmd.Env, fakeapi.ClaudeEnv(apiURL)...)
	cmd.Stderr = testWriter{t}
	require.NoError(t, cmd.Start())
	p := &bridgeProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// collector reads events the way ingest does — after the last number it
// holds, through bridge outages — and keeps everything it saw.
type collector struct {
	mu   sync.Mutex
	seen []bridge.Event
}

func (c *collector) run(ctx context.Context, client *bridge.Client) {
	for ctx.Err() == nil {
		c.mu.Lock()
		var after uint64
		if n := len(c.seen); n > 0 {
			after = c.seen[n-1].Seq
		}
		c.mu.Unlock()
		page, err := client.Events(ctx, after, 100, 500*time.Millisecond)
		if err != nil {
			time.Sleep(50 * time.Millisecond) // the bridge is down: try again
			continue
		}
		c.mu.Lock()
		c.seen = append(c.seen, page.Events...)
		c.mu.Unlock()
	}
}

func (c *collector) snapshot() []bridge.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bridge.Event(nil), c.seen...)
}

func (c *collector) waitFor(t *testing.T, timeout time.Duration, cond func([]bridge.Event) bool) []bridge.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := c.snapshot()
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("not seen in %s; last lines: %s", timeout, tail(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestBridgeSIGKILLedMidTurnResumes(t *testing.T) {
	claude := fakeapi.ClaudeBin(t)
	api := fakeapi.New()
	apiSrv := api.Start()
	defer apiSrv.Close()
	home := t.TempDir()
	marker := filepath.Join(home, "step1.txt")
	api.Script(
		fakeapi.Rule{Match: "long job", Steps: []fakeapi.Reply{fakeapi.Write(marker, "step one\n"), fakeapi.Slow(4*time.Second, "long job done")}},
		fakeapi.Rule{Match: "are you there", Steps: []fakeapi.Reply{fakeapi.Text("still here")}},
	)
	addr := freeAddr(t)
	client, err := bridge.NewClient("http://"+addr, testToken, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	first := startBridgeProcess(t, home, addr, claude, apiSrv.URL)
	require.Eventually(t, func() bool { return client.Health(ctx) == nil }, 30*time.Second, 20*time.Millisecond)
	before, err := client.Status(ctx)
	require.NoError(t, err)
	var col collector
	go col.run(ctx, client)

	_, err = client.Prompt(ctx, bridge.PromptRequest{ID: "job", From: "user:test", Text: "run the long job"})
	require.NoError(t, err)
	// Kill once Claude Code has done step one and waits on the slow reply.
	var agentPID int
	require.Eventually(t, func() bool {
		st, err := client.Status(ctx)
		if err != nil {
			return false
		}
		agentPID = st.AgentPID
		_, statErr := os.Stat(marker)
		req, ok := api.LastRequestFor("long job")
		_, step := req.Prompt()
		return statErr == nil && ok && step == 1 && st.State == bridge.StateWorking
	}, 60*time.Second, 20*time.Millisecond)
	seenBeforeKill := col.waitFor(t, 10*time.Second, hasType("user", "", 1)) // the tool result line
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	<-first.done
	require.Eventually(t, func() bool { return !alive(agentPID) }, 10*time.Second, 20*time.Millisecond,
		"Claude Code dies with its bridge (Pdeathsig)")

	startBridgeProcess(t, home, addr, claude, apiSrv.URL)
	col.waitFor(t, 90*time.Second, hasType("result", "", 1)) // the interrupted prompt ran again
	_, err = client.Prompt(ctx, bridge.PromptRequest{ID: "ping", From: "user:test", Text: "are you there?"})
	require.NoError(t, err)
	evs := col.waitFor(t, 90*time.Second, hasType("result", "", 2))

	// What the reader saw: every number once, in order, none missing, and
	// the lines it saw before the kill are unchanged.
	requireContiguous(t, evs, 1)
	require.Equal(t, seenBeforeKill, evs[:len(seenBeforeKill)])
	require.Equal(t, []string{"long job done", "still here"}, resultText(evs))
	require.Equal(t, 2, countType(evs, "bridge", "bridge_started"))
	require.Equal(t, 3, countType(evs, "bridge", "turn_started"), "the prompt in flight ran again after the restart, then the next one")

	// The log served after the restart is exactly what the reader holds.
	page, err := client.Events(ctx, 0, bridge.MaxLimit, 0)
	require.NoError(t, err)
	require.Equal(t, evs[len(evs)-1].Seq, page.LastSeq)
	require.Equal(t, len(evs), len(page.Events))
	for i := range evs {
		require.Equal(t, evs[i].Seq, page.Events[i].Seq)
		require.JSONEq(t, string(evs[i].Line), string(page.Events[i].Line))
	}

	after, err := client.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, before.SessionID, after.SessionID, "the new bridge speaks in the same session")
	req, ok := api.LastRequestFor("are you there")
	require.True(t, ok)
	require.True(t, req.Contains("run the long job"), "Claude resumed the session with its history")
}
