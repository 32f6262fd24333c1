package main

// The rig of the model gateway's end-to-end rows (gateway_*_test.go): the
// real binary on a directory store with the local runtime and the real
// Claude Code, init with the gateway on (the default) and --api-url at a
// real `sporectl serve` process, which alone holds the model key and
// forwards to the fake Messages API. Every sporectl command's output and
// every serve's log are kept, so a row can search them for the key.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// gatewayKey is the model key in serve's environment, and nowhere else:
// unique, so finding it anywhere else is finding a leak.
const gatewayKey = "sk-ant-serve-only-7d41c9e2-5b0f-gateway-e2e"

type gatewayRig struct {
	*rig
	api      *fakeapi.Server
	upstream string // the fake's URL: serve's --model-upstream
	addr     string // where serve listens
	apiURL   string // http://addr: init's --api-url

	mu      sync.Mutex
	serve   *exec.Cmd
	logs    []*bytes.Buffer // each serve process's stderr, read once it ended
	outputs []string        // every sporectl command's stdout and stderr
}

// newGatewayRig starts the fake and serve, and runs init with initArgs
// (after the rig's own: the claude agent, --api-url, the recovery policy).
func newGatewayRig(t *testing.T, api *fakeapi.Server, initArgs ...string) *gatewayRig {
	t.Helper()
	bin := fakeapi.ClaudeBin(t)
	srv := api.Start()
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	// What the spores may inherit: their Claude Code and its switches,
	// no model key (there is none in the test's environment either).
	env := []string{"SPORECTL_CLAUDE_BIN=" + bin, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	g := &gatewayRig{rig: &rig{t: t, store: store, root: store, env: env}, api: api, upstream: srv.URL, addr: addr, apiURL: "http://" + addr}
	for _, kv := range os.Environ() {
		require.NotContains(t, kv, gatewayKey, "the key is in the test's own environment")
	}
	g.ok(append(append([]string{"init", "--agent", "claude", "--api-url", g.apiURL}, recoveryPolicy...), initArgs...)...)
	g.startServe()
	t.Cleanup(g.stopServe)
	return g
}

// run runs a sporectl command and keeps what it printed.
func (g *gatewayRig) run(args ...string) cmdResult {
	g.t.Helper()
	res := g.rig.run(args...)
	g.mu.Lock()
	g.outputs = append(g.outputs, fmt.Sprintf("sporectl %v\n%s%s", args, res.stdout, res.stderr))
	g.mu.Unlock()
	return res
}

func (g *gatewayRig) ok(args ...string) string {
	g.t.Helper()
	res := g.run(args...)
	require.Equal(g.t, 0, res.code, "sporectl %v: %s", args, res)
	return res.stdout
}

// startServe starts serve on the rig's address with the key in its
// environment only, and waits until it answers.
func (g *gatewayRig) startServe() {
	g.t.Helper()
	cmd := exec.Command(binPath, "serve", "--addr", g.addr, "--model-upstream", g.upstream, "-v")
	cmd.Env = serveEnv("SPORECTL_STORE="+g.store, "ANTHROPIC_API_KEY="+gatewayKey)
	log := serveStart(g.t, cmd, g.apiURL)
	g.mu.Lock()
	g.serve = cmd
	g.logs = append(g.logs, log)
	g.mu.Unlock()
}

// killServe SIGKILLs serve and waits until it is gone.
func (g *gatewayRig) killServe() {
	g.t.Helper()
	g.mu.Lock()
	cmd := g.serve
	g.mu.Unlock()
	require.NoError(g.t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// stopServe ends serve as an operator does (SIGTERM), if it runs.
func (g *gatewayRig) stopServe() {
	g.mu.Lock()
	cmd := g.serve
	g.mu.Unlock()
	if cmd == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// serveLog is every serve's stderr so far; serve must have ended.
func (g *gatewayRig) serveLog() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	require.NotNil(g.t, g.serve.ProcessState, "serve's log is read once it ended")
	var b strings.Builder
	for _, l := range g.logs {
		b.WriteString(l.String())
	}
	return b.String()
}

// wake creates spore id awake (with createArgs) and waits until it is
// Healthy.
func (g *gatewayRig) wake(id string, createArgs ...string) {
	g.t.Helper()
	g.t.Cleanup(func() { g.cleanup(id) })
	g.ok(append([]string{"create", id, "--wake"}, createArgs...)...)
	g.ok("wake", id, "--wait", "20s")
	require.Eventually(g.t, func() bool {
		return g.status(id).Effective == "Healthy"
	}, 30*time.Second, 100*time.Millisecond, "%s never Healthy", id)
}

// gatewayStatus is what a row reads of `status -o json`.
type gatewayStatus struct {
	Desired    string       `json:"desired"`
	Effective  string       `json:"effective"`
	Reason     string       `json:"reason"`
	SleptBy    string       `json:"slept_by"`
	Spend      *state.Spend `json:"spend"`
	OverBudget string       `json:"over_budget"`
	// ReportedSpend is the agent's own report, shown beside the
	// gateway's count (spend) and never judged.
	ReportedSpend *state.Spend `json:"reported_spend"`
}

func (g *gatewayRig) status(id string) gatewayStatus {
	g.t.Helper()
	res := g.run("status", "-o", "json", id)
	var doc struct {
		Spores []gatewayStatus `json:"spores"`
	}
	require.NoError(g.t, json.Unmarshal([]byte(res.stdout), &doc), "status: %s", res)
	require.Len(g.t, doc.Spores, 1, "status: %s", res)
	return doc.Spores[0]
}

// prompt sends a prompt the command must acknowledge (exit 0).
func (g *gatewayRig) prompt(id, text string) string {
	g.t.Helper()
	out := g.ok("prompt", "-o", "json", id, text)
	var res struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	require.NoError(g.t, json.Unmarshal([]byte(out), &res), "prompt: %s", out)
	require.Equal(g.t, "delivered", res.State, "prompt: %s", out)
	return res.ID
}

// counted is the gateway's record of id, as stored.
func (g *gatewayRig) counted(id string) state.GatewayRecord {
	g.t.Helper()
	sp, _ := g.record(id)
	return sp.Status.GatewayRecord
}

// sumOf is the usage the fake said its answers used.
func sumOf(answers []fakeapi.Answer) state.Usage {
	var u state.Usage
	for _, a := range answers {
		u = u.Add(state.Usage{InputTokens: int64(a.Usage.Input), OutputTokens: int64(a.Usage.Output),
			CacheCreationTokens: int64(a.Usage.CacheCreation), CacheReadTokens: int64(a.Usage.CacheRead)})
	}
	return u
}

// tokens leaves out the cost, which the fake does not know.
func tokens(u state.Usage) state.Usage {
	u.CostMicros = 0
	return u
}

// requireNowhere fails if secret is in any file under the store's
// directory (its rows, the spores' homes and run files), in the
// environment or command line of any process of the spores, in any
// sporectl command's output so far or (once serve ended) in serve's log.
// It returns how many files and processes it searched.
func (g *gatewayRig) requireNowhere(secret string, ids ...string) (files, procs int) {
	g.t.Helper()
	files = requireInNoFile(g.t, g.root, secret)
	for _, id := range ids {
		procs += requireInNoProcess(g.t, g.procs(id), secret)
	}
	g.mu.Lock()
	outputs := append([]string(nil), g.outputs...)
	ended := g.serve == nil || g.serve.ProcessState != nil
	g.mu.Unlock()
	for _, out := range outputs {
		require.NotContains(g.t, out, secret, "a command's output holds it")
	}
	if ended {
		require.NotContains(g.t, g.serveLog(), secret, "serve's log holds it")
	}
	return files, procs
}

// requireTokenUnprinted fails if spore id's API token (its half of the
// model credential its agent holds) is in any sporectl command's output
// or, once serve ended, serve's log.
func (g *gatewayRig) requireTokenUnprinted(id string) {
	g.t.Helper()
	b, err := os.ReadFile(filepath.Join(g.home(id), ".sporectl-bridge", "api-token"))
	require.NoError(g.t, err)
	token := strings.TrimSpace(string(b))
	require.NotEmpty(g.t, token)
	g.mu.Lock()
	outputs := append([]string(nil), g.outputs...)
	g.mu.Unlock()
	for _, out := range outputs {
		require.NotContains(g.t, out, token, "a command's output holds the spore's token")
	}
	require.NotContains(g.t, g.serveLog(), token, "serve's log holds the spore's token")
}

func requireInNoFile(t *testing.T, root, secret string) int {
	t.Helper()
	var files int
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // gone since it was listed (a temp file, a lock)
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		require.False(t, bytes.Contains(b, []byte(secret)), "%s holds it", path)
		files++
		return nil
	}))
	return files
}

func requireInNoProcess(t *testing.T, pids []int, secret string) int {
	t.Helper()
	var n int
	for _, pid := range pids {
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if err != nil {
				continue // gone since it was listed
			}
			require.False(t, bytes.Contains(b, []byte(secret)), "/proc/%d/%s holds it", pid, f)
		}
		n++
	}
	return n
}
