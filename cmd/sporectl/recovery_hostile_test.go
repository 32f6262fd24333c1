package main

// The recovery row "a spore's bridge lies": the agent, which runs
// arbitrary code in its spore's process tree, ends its bridge and answers
// on the bridge's port itself. The local runtime finds a spore's bridge
// by its environment mark (SPORECTL_SPORE_ID and HOME) and its command
// line (a session leader running "… bridge --addr ADDR --home HOME"),
// not by who listens on the port: a server the test itself started would
// not carry the mark, and the spore would be seen Dead and restarted. So
// the hostile server is this test binary run again as such a process,
// found exactly as an agent's replacement would be.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/state"
)

// hostileBridgeEnv, set, makes this binary the hostile bridge: it serves
// the address after --addr in its arguments.
const hostileBridgeEnv = "SPORECTL_TEST_HOSTILE_BRIDGE"

// hostileLine is the size of the one line the hostile bridge offers.
const hostileLine = 40 << 20

// hostileLastSeq is what its status claims.
const hostileLastSeq = 1 << 62

func init() {
	if os.Getenv(hostileBridgeEnv) == "" {
		return
	}
	var addr string
	for i, a := range os.Args {
		if a == "--addr" && i+1 < len(os.Args) {
			addr = os.Args[i+1]
		}
	}
	srv := &http.Server{Addr: addr, Handler: hostileBridge()}
	fmt.Fprintln(os.Stderr, srv.ListenAndServe())
	os.Exit(1)
}

// hostileBridge speaks the bridge's routes and lies: a status claiming
// 2^62 lines, and a page whose one line is 40 MB, streamed (never held).
func hostileBridge() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"state":"idle","session_id":"hostile","last_seq":%d,"queue":0,"agent":"echo","healthy":true}`, uint64(hostileLastSeq))
	})
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, req *http.Request) {
		after, _ := strconv.ParseUint(req.URL.Query().Get("after"), 10, 64)
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		fmt.Fprintf(bw, `{"events":[{"seq":%d,"at":"2026-01-01T00:00:00Z","line":"`, after+1)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for sent := 0; sent < hostileLine; sent += len(chunk) {
			if _, err := bw.Write(chunk); err != nil {
				return // the reader stopped: as it should
			}
		}
		fmt.Fprintf(bw, `"}],"last_seq":%d}`, uint64(hostileLastSeq))
		_ = bw.Flush()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"hostile"}`))
	})
	return mux
}

// replaceBridge SIGKILLs spore id's bridge and starts the hostile one in
// its place: on its port, with its mark, leading its own session, with
// the command line the runtime looks for. It waits until it answers.
func (r *rig) replaceBridge(id string) *exec.Cmd {
	r.t.Helper()
	addr, home := r.runFile(id).Addr, r.home(id)
	r.killBridge(id)
	require.Eventually(r.t, func() bool { return len(r.procs(id)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"the processes of %s outlived its bridge", id)
	cmd := exec.Command(os.Args[0], "bridge", "--addr", addr, "--home", home)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, sporeenv.SporeID+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, hostileBridgeEnv+"=1", "HOME="+home, sporeenv.SporeID+"="+id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stderr = os.Stderr
	require.NoError(r.t, cmd.Start())
	r.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(r.t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 15*time.Second, 20*time.Millisecond, "the hostile bridge did not come up on %s", addr)
	require.Equal(r.t, []int{cmd.Process.Pid}, r.bridgePIDs(id), "the hostile server is found as %s's bridge", id)
	return cmd
}

// storeBytes is the size of every file of a directory store but the
// local runtime's homes and run files.
func storeBytes(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == filepath.Join(root, "homes") || p == filepath.Join(root, "run")) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	}))
	return n
}

// TestRecoveryHostileBridge — row "a spore's bridge lies", on the
// directory store: spore h's bridge is replaced by a hostile server carrying its
// mark that claims 2^62 lines and offers a 40 MB line; meanwhile a's whole
// tree is SIGKILLed and a prompt to c waits in the outbox. reconcile
// completes with exit 3: h is Suspect/ContractBreach (named by status),
// nothing of the line is stored, h's "bridge" is left alone; a is
// restarted and c's prompt delivered by the same pass; every line of a
// and c is in the store once.
func TestRecoveryHostileBridge(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	runHostileBridge(t, r, func() int64 { return storeBytes(t, r.store) })
}

// TestRecoveryHostileBridgePG — the same row on PostgreSQL: what the
// store holds is measured as the text of its events and spores rows.
func TestRecoveryHostileBridgePG(t *testing.T) {
	r, dbURL := newPGRig(t)
	runHostileBridge(t, r, func() int64 {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT
			(SELECT coalesce(sum(octet_length(e::text)), 0) FROM sporectl.events e) +
			(SELECT coalesce(sum(octet_length(s::text)), 0) FROM sporectl.spores s)`).Scan(&n))
		return n
	})
}

// runHostileBridge is the row on r's store; storeSize measures what the
// store holds, in bytes.
func runHostileBridge(t *testing.T, r *rig, storeSize func() int64) {
	const h, a, c = "hostile-h", "hostile-a", "hostile-c"
	for _, id := range []string{h, a, c} {
		r.wake(id)
	}
	ph, _ := r.prompt(h, "h: before its bridge is replaced")
	pa, _ := r.prompt(a, "a: before the kill")
	pc, _ := r.prompt(c, "c: before")
	for _, id := range []string{h, a, c} {
		r.settle(id, 30*time.Second)
	}
	r.requireIntact(h, expect{echo: true, prompts: []sent{{id: ph, text: "h: before its bridge is replaced", acked: true}}})
	hBefore := r.storedEvents(h)
	spH, _ := r.record(h)

	hostile := r.replaceBridge(h)
	p := r.proxyBridge(c)
	p.set(func(p *bridgeProxy) { p.refusePrompts = true })
	pc2, st := r.prompt(c, "c: delivered by the pass that meets the hostile bridge")
	require.Equal(t, "waiting", st)
	p.set(func(p *bridgeProxy) { p.refusePrompts = false })
	r.killTree(a)
	size := storeSize()

	rep, code := r.reconcile()
	require.Equal(t, 3, code, "a dead spore and a suspect one: %+v", rep)
	hs := rep.spore(t, h)
	require.Equal(t, "Suspect", hs.Effective, "%+v", hs)
	require.Equal(t, "ContractBreach", hs.Observed.Reason, "the breach shown without -v: %+v", hs)
	require.True(t, rep.did(a, "restart"), "the same pass restarts a: %+v", rep.Actions)
	_, pending := r.record(c)
	require.Empty(t, pending, "the same pass delivers c's prompt")
	require.False(t, rep.did(h, "restart") || rep.did(h, "stop"), "a lying bridge costs its spore its trust, not its processes: %+v", rep.Actions)
	require.True(t, alive(hostile.Process.Pid))

	// Nothing of the line was stored: one health event for h at most.
	grown := storeSize() - size
	t.Logf("the store grew by %d bytes in the pass", grown)
	require.Less(t, grown, int64(1<<20), "the store took in part of the hostile line")
	hAfter := r.storedEvents(h)
	requirePrefix(t, hBefore, hAfter, "h's log after the breach")
	for _, e := range hAfter[len(hBefore):] {
		require.NotEqual(t, state.KindAgent, e.Kind, "a line of the hostile bridge was stored: seq %d", e.BridgeSeq)
		require.Less(t, len(e.Text)+len(e.Line), 4096, "event %d", e.Seq)
	}
	sp, _ := r.record(h)
	require.Equal(t, spH.BridgeSeq, sp.BridgeSeq, "h's bridge_seq did not move")

	// status names the breach.
	s, code := r.status(h)
	require.Equal(t, 3, code, "status: %+v", s)
	require.Equal(t, "Suspect", s.Effective, "%+v", s)
	require.Equal(t, "ContractBreach", s.Observed.Reason, "%+v", s)
	var breach []string
	for _, e := range r.events(h) {
		if e.Kind == state.KindLifecycle && e.Action == "health" && strings.Contains(e.Text, "broke its contract") {
			breach = append(breach, e.Text)
		}
	}
	require.Len(t, breach, 1, "one health event names the breach")
	require.Contains(t, breach[0], "GET /v1/events: an answer longer than "+strconv.Itoa(bridge.MaxEventsAnswerBytes)+" bytes")

	// A second pass reads the bound again, no more; h stays Suspect.
	size = storeSize()
	rep, _ = r.reconcile()
	require.Equal(t, "Suspect", rep.spore(t, h).Effective)
	require.Less(t, storeSize()-size, int64(1<<20))

	// The others, healed and delivered to, hold every line once.
	r.waitHealthy(a, 30*time.Second)
	p.detach(r, c)
	r.settle(a, 30*time.Second)
	r.settle(c, 30*time.Second)
	r.requireIntact(a, expect{echo: true, prompts: []sent{{id: pa, text: "a: before the kill", acked: true}}})
	r.requireIntact(c, expect{echo: true, prompts: []sent{
		{id: pc, text: "c: before", acked: true},
		{id: pc2, text: "c: delivered by the pass that meets the hostile bridge", acked: true}}})
}
