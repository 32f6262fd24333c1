package main

// The recovery table (docs/recovery.md), one end-to-end test per row, with
// the real binary, the local runtime and the dir store unless a row says
// otherwise. This file holds the rig every row shares and the rows that
// run the echo agent; recovery_claude_test.go, recovery_pg_test.go and
// recovery_kube_test.go hold the others.
//
// Every row ends in requireIntact, which checks what the table promises:
// the store holds every line the bridge numbered exactly once and in
// order (compared with the bridge's own log in the home), every
// acknowledged prompt was delivered exactly once (one "delivered" event,
// one turn started for it by the bridge, one answer), nothing is left in
// the outbox, the files written in the home survived, and `check` is
// clean. Status is asserted at each step of each row: Dead while dead,
// never Healthy and never Diverged for a spore whose processes are gone.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/eventlog"
	"github.com/sporectl/sporectl/local"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// commandTimeout bounds every sporectl command a recovery test runs.
const commandTimeout = 2 * time.Minute

// rig is one colony under test: its store, the local runtime's directory
// (homes/ and run/), and the environment every command gets.
type rig struct {
	t     *testing.T
	store string // a directory or a postgres:// URL
	root  string // the local runtime's directory
	env   []string
	// For the kube runtime, where homes and bridges are not local
	// processes: the spore's home as the test mounts it, and a client
	// of its bridge (an error while none runs).
	homeOf   func(id string) string
	bridgeOf func(id string) (*bridge.Client, error)
}

// newRig makes a dir store and runs init with args.
func newRig(t *testing.T, env []string, initArgs ...string) *rig {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	r := &rig{t: t, store: store, root: store, env: env}
	r.ok(append([]string{"init"}, initArgs...)...)
	return r
}

// storeRig is a rig on a store the test made and initialised itself
// (sporectl's commands over it, no runtime of the rig's own).
func storeRig(t *testing.T, store string) *rig {
	return &rig{t: t, store: store, root: store}
}

// recoveryPolicy are init flags that keep a row's backoff short and its
// breaker out of the way (the crash-loop row sets its own).
var recoveryPolicy = []string{"--backoff-initial", "1s", "--backoff-max", "2s", "--breaker-failures", "50", "--breaker-window", "15m"}

func echoInit() []string { return append([]string{"--agent", "echo"}, recoveryPolicy...) }

type cmdResult struct {
	stdout, stderr string
	code           int
}

func (c cmdResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", c.code, c.stdout, c.stderr)
}

func (r *rig) cmd(args ...string) *exec.Cmd {
	c := sporectl(r.store, args...)
	c.Env = append(c.Env, r.env...)
	return c
}

// run runs one command to its end (at most commandTimeout).
func (r *rig) run(args ...string) cmdResult {
	r.t.Helper()
	res, err := r.runErr(args...)
	require.NoError(r.t, err)
	return res
}

// runErr is run for goroutines other than the test's: it reports instead
// of failing the test.
func (r *rig) runErr(args ...string) (cmdResult, error) {
	c := r.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		return cmdResult{}, fmt.Errorf("sporectl %v: %w", args, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(commandTimeout):
		_ = c.Process.Kill()
		<-done
		return cmdResult{}, fmt.Errorf("sporectl %v did not end within %s\nstderr: %s", args, commandTimeout, errb.String())
	}
	res := cmdResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		return res, fmt.Errorf("sporectl %v: %w", args, err)
	}
	return res, nil
}

func (r *rig) ok(args ...string) string {
	r.t.Helper()
	res := r.run(args...)
	require.Equal(r.t, 0, res.code, "sporectl %v: %s", args, res)
	return res.stdout
}

// runKilledAfter starts a command and SIGKILLs it after delay unless it
// ended before. killed is false when it ended on its own (then res holds
// its result).
func (r *rig) runKilledAfter(delay time.Duration, args ...string) (res cmdResult, killed bool) {
	r.t.Helper()
	c := r.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	require.NoError(r.t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(delay):
		_ = c.Process.Signal(syscall.SIGKILL)
		select {
		case err = <-done:
		case <-time.After(commandTimeout):
			r.t.Fatalf("sporectl %v survived SIGKILL", args)
		}
	}
	res = cmdResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return res, true
		}
		res.code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("sporectl %v: %v", args, err)
	}
	return res, false
}

// --- spores and their processes ---

func (r *rig) home(id string) string {
	if r.homeOf != nil {
		return r.homeOf(id)
	}
	return filepath.Join(r.root, "homes", id)
}

// wake creates spore id awake, waits for its bridge, and makes sure its
// processes are gone when the test ends, however it ends.
func (r *rig) wake(id string) {
	r.t.Helper()
	r.t.Cleanup(func() { r.cleanup(id) })
	r.ok("create", id, "--wake")
	r.ok("wake", id, "--wait", "20s")
	r.waitHealthy(id, 30*time.Second)
}

// cleanup deletes the spore (ending its processes) and kills whatever of
// it is left.
func (r *rig) cleanup(id string) {
	c := r.cmd("delete", id)
	done := make(chan struct{})
	go func() { _ = c.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
	}
	for _, pid := range r.procs(id) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// writeHome writes a file into the spore's home, as work the spore did.
func (r *rig) writeHome(id, rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.home(id), rel)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(content), 0o644))
}

type runFileDoc struct {
	PID  int    `json:"pid"`
	Addr string `json:"addr"`
}

func (r *rig) runFile(id string) runFileDoc {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, "run", id+".json"))
	require.NoError(r.t, err)
	var rf runFileDoc
	require.NoError(r.t, json.Unmarshal(b, &rf))
	return rf
}

// recordedPID is the bridge pid of id's run file, 0 when there is none
// (or it is damaged).
func (r *rig) recordedPID(id string) int {
	b, err := os.ReadFile(filepath.Join(r.root, "run", id+".json"))
	if err != nil {
		return 0
	}
	var rf runFileDoc
	if json.Unmarshal(b, &rf) != nil {
		return 0
	}
	return rf.PID
}

// procs lists the live processes of spore id: those whose environment
// carries the runtime's mark and the spore's home (so another test's spore
// of the same id is never counted), read as the runtime reads them.
func (r *rig) procs(id string) []int {
	return local.MarkedProcesses(id, r.home(id))
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// pgid is pid's process group.
func pgid(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		return 0
	}
	return g
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	require.Eventually(t, func() bool { return !slices.ContainsFunc(pids, alive) },
		10*time.Second, 10*time.Millisecond, "processes %v survived SIGKILL", pids)
}

// bridgePIDs are the spore's live bridge processes, found by their mark
// (as the local runtime finds them): a start killed between spawning the
// bridge and writing its run file leaves a bridge no run file names.
func (r *rig) bridgePIDs(id string) []int {
	var out []int
	for _, pid := range r.procs(id) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte("\x00bridge\x00")) && sessionLeader(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// sessionLeader reports whether pid leads its session (the bridge does):
// field 6 of /proc/PID/stat, after the command name.
func sessionLeader(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 3 && f[3] == strconv.Itoa(pid)
}

// killBridge SIGKILLs the spore's bridge process (only it) and waits until
// it is gone. Its Claude Code, if one runs, dies with it (Pdeathsig).
func (r *rig) killBridge(id string) int {
	r.t.Helper()
	pid := r.recordedPID(id)
	if pid == 0 || !alive(pid) {
		// Not recorded (see bridgePIDs): the one found by its mark.
		if b := r.bridgePIDs(id); len(b) == 1 {
			pid = b[0]
		}
	}
	require.True(r.t, alive(pid), "the bridge of %s is not running", id)
	require.NoError(r.t, syscall.Kill(pid, syscall.SIGKILL))
	waitGone(r.t, pid)
	return pid
}

// killTree SIGKILLs the spore's whole process tree at once: every process
// group its processes are in (kill -- -pgid), then any straggler.
func (r *rig) killTree(id string) []int {
	r.t.Helper()
	pids := r.procs(id)
	require.NotEmpty(r.t, pids, "spore %s has no processes to kill", id)
	groups := map[int]bool{}
	for _, pid := range pids {
		if g := pgid(pid); g > 1 {
			groups[g] = true
		}
	}
	for g := range groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(r.t, pids...)
	require.Empty(r.t, r.procs(id), "processes of %s left after killing its tree", id)
	return pids
}

// --- the bridge, read from outside sporectl ---

// bridgeClient is a client of the spore's bridge at the address its run
// file names.
func (r *rig) bridgeClient(id string) (*bridge.Client, error) {
	if r.bridgeOf != nil {
		return r.bridgeOf(id)
	}
	addr := r.recordedAddr(id)
	if addr == "" {
		// No (live) run file: the bridge found by its mark, at the address
		// on its command line, as the local runtime reaches it.
		addr = r.markedAddr(id)
	}
	if addr == "" {
		return nil, fmt.Errorf("no bridge of %s to reach", id)
	}
	tok, err := os.ReadFile(filepath.Join(r.home(id), ".sporectl-bridge", "token"))
	if err != nil {
		return nil, err
	}
	return bridge.NewClient("http://"+addr, strings.TrimSpace(string(tok)), &http.Client{Timeout: 5 * time.Second})
}

// recordedAddr is the address in id's run file when its bridge lives.
func (r *rig) recordedAddr(id string) string {
	b, err := os.ReadFile(filepath.Join(r.root, "run", id+".json"))
	if err != nil {
		return ""
	}
	var rf runFileDoc
	if json.Unmarshal(b, &rf) != nil || !alive(rf.PID) {
		return ""
	}
	return rf.Addr
}

// markedAddr is the --addr of the one live bridge carrying id's mark.
func (r *rig) markedAddr(id string) string {
	pids := r.bridgePIDs(id)
	if len(pids) != 1 {
		return ""
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "cmdline"))
	if err != nil {
		return ""
	}
	args := strings.Split(string(cmdline), "\x00")
	for i, a := range args {
		if a == "--addr" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func (r *rig) bridge(id string) *bridge.Client {
	r.t.Helper()
	c, err := r.bridgeClient(id)
	require.NoError(r.t, err)
	return c
}

func (r *rig) bridgeStatus(id string) bridge.Status {
	r.t.Helper()
	st, err := r.bridge(id).Status(context.Background())
	require.NoError(r.t, err)
	return st
}

// waitIdle waits until the bridge has run everything it was given.
func (r *rig) waitIdle(id string, timeout time.Duration) bridge.Status {
	r.t.Helper()
	var last bridge.Status
	require.Eventually(r.t, func() bool {
		c, err := r.bridgeClient(id)
		if err != nil {
			return false
		}
		st, err := c.Status(context.Background())
		last = st
		return err == nil && st.State == bridge.StateIdle && st.Queue == 0
	}, timeout, 50*time.Millisecond, "bridge of %s never became idle (last status %+v)", id, last)
	return last
}

// bridgeLog reads the bridge's numbered log from the home: the complete
// records (a torn tail, never served, is not a line).
func (r *rig) bridgeLog(id string) []eventlog.Record {
	r.t.Helper()
	return readBridgeLog(r.t, filepath.Join(r.home(id), ".sporectl-bridge", "events.log"))
}

func readBridgeLog(t *testing.T, path string) []eventlog.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []eventlog.Record
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		rec, err := eventlog.ParseRecord(b[:i+1])
		require.NoError(t, err, "%s: record %d", path, len(out)+1)
		rec.Line = append(json.RawMessage(nil), rec.Line...)
		out = append(out, rec)
		b = b[i+1:]
	}
	return out
}

// --- what sporectl says ---

type sporeStatus struct {
	ID       string `json:"id"`
	Desired  string `json:"desired"`
	Observed struct {
		Pod      string `json:"pod"`
		Bridge   string `json:"bridge"`
		Activity string `json:"activity"`
		Restarts int    `json:"restarts"`
		Reason   string `json:"reason"`
	} `json:"observed"`
	Effective string `json:"effective"`
	Reason    string `json:"reason"`
	LastSeq   uint64 `json:"last_seq"`
}

type passReport struct {
	Spores  []sporeStatus  `json:"spores"`
	Actions []reportAction `json:"actions"`
}

type reportAction struct {
	Spore  string `json:"spore"`
	Action string `json:"action"`
	Detail string `json:"detail"`
	Error  string `json:"error"`
}

func (p passReport) spore(t *testing.T, id string) sporeStatus {
	t.Helper()
	for _, s := range p.Spores {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("spore %s not in the report %+v", id, p)
	return sporeStatus{}
}

func (p passReport) did(id, action string) bool {
	return slices.ContainsFunc(p.Actions, func(a reportAction) bool {
		return a.Spore == id && a.Action == action && a.Error == ""
	})
}

// status runs `status -o json ID`.
func (r *rig) status(id string) (sporeStatus, int) {
	r.t.Helper()
	res := r.run("status", "-o", "json", id)
	var doc passReport
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &doc), "status: %s", res)
	require.Len(r.t, doc.Spores, 1, "status: %s", res)
	return doc.Spores[0], res.code
}

// reconcile runs `reconcile -o json [ID...]`; the pass must have run
// (exit 0, or 3 when some spore needs attention).
func (r *rig) reconcile(ids ...string) (passReport, int) {
	r.t.Helper()
	res := r.run(append([]string{"reconcile", "-o", "json"}, ids...)...)
	require.Contains(r.t, []int{0, 3}, res.code, "reconcile: %s", res)
	var doc passReport
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &doc), "reconcile: %s", res)
	return doc, res.code
}

// reconcileUntil runs reconcile, as cron would, until it does action to
// spore id; the spore must stay Dead until then (it is dead, and backing
// off).
func (r *rig) reconcileUntil(id, action string, timeout time.Duration) passReport {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rep, _ := r.reconcile()
		if rep.did(id, action) {
			return rep
		}
		s := rep.spore(r.t, id)
		require.Equal(r.t, "Dead", s.Effective, "waiting for reconcile to %s %s: %+v", action, id, s)
		if time.Now().After(deadline) {
			r.t.Fatalf("reconcile did not %s %s within %s: %+v", action, id, timeout, rep)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// requireTruthful fails if status says what cannot be true: Diverged
// (nothing in these rows runs twice or while asleep), or Healthy while the
// spore has no live bridge.
func (r *rig) requireTruthful(id string, s sporeStatus) {
	r.t.Helper()
	require.NotEqual(r.t, "Diverged", s.Effective, "status of %s: %+v", id, s)
	if s.Effective == "Healthy" && r.bridgeOf == nil {
		pid := r.recordedPID(id)
		require.True(r.t, pid > 0 && alive(pid) || len(r.bridgePIDs(id)) > 0, "status says %s is Healthy but its bridge (pid %d, nor one found by its mark) is gone: %+v", id, pid, s)
	}
}

// requireDead asserts that status, run now, says Dead (exit 3): the
// caller has made sure every process of the spore is gone.
func (r *rig) requireDead(id string) sporeStatus {
	r.t.Helper()
	for i := 0; i < 2; i++ { // and it stays so: status heals nothing
		s, code := r.status(id)
		require.Equal(r.t, "Dead", s.Effective, "status of a spore whose processes are gone: %+v", s)
		require.Equal(r.t, 3, code, "status exits 3 when a spore is Dead")
		require.Contains(r.t, []string{"Absent", "Failed"}, s.Observed.Pod, "%+v", s)
		require.NotEqual(r.t, "Up", s.Observed.Bridge, "%+v", s)
	}
	s, _ := r.status(id)
	return s
}

// waitHealthy polls status until Healthy; every answer on the way must be
// truthful.
func (r *rig) waitHealthy(id string, timeout time.Duration) sporeStatus {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, code := r.status(id)
		r.requireTruthful(id, s)
		if s.Effective == "Healthy" {
			require.Equal(r.t, 0, code, "status exits 0 when all is Healthy: %+v", s)
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s not Healthy after %s: %+v", id, timeout, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prompt sends a prompt and returns its outbox id when the command
// acknowledged it (exit 0).
func (r *rig) prompt(id, text string, flags ...string) (promptID, state string) {
	r.t.Helper()
	out := r.ok(append([]string{"prompt", "-o", "json", id, text}, flags...)...)
	var res struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	require.NoError(r.t, json.Unmarshal([]byte(out), &res), "prompt: %s", out)
	require.NotEmpty(r.t, res.ID)
	return res.ID, res.State
}

// events reads the spore's whole event log with `events ID -o json`.
func (r *rig) events(id string) []state.Event {
	r.t.Helper()
	var doc struct {
		Events []state.Event `json:"events"`
	}
	require.NoError(r.t, json.Unmarshal([]byte(r.ok("events", id, "-o", "json")), &doc))
	return doc.Events
}

// --- the store, read in-process (never written) ---

func (r *rig) openStore() state.Store {
	r.t.Helper()
	ctx := context.Background()
	var st state.Store
	var err error
	if strings.HasPrefix(r.store, "postgres://") {
		st, err = pgstore.Open(ctx, r.store, pgstore.Options{})
	} else {
		st, err = dirstore.Open(ctx, r.store, dirstore.Options{})
	}
	require.NoError(r.t, err)
	return st
}

// record is the spore's record and its pending outbox, as stored.
func (r *rig) record(id string) (state.Spore, []state.OutboxEntry) {
	r.t.Helper()
	st := r.openStore()
	defer st.Close()
	var sp state.Spore
	var pending []state.OutboxEntry
	ctx := context.Background()
	require.NoError(r.t, st.View(ctx, func(tx state.Tx) error {
		var err error
		if sp, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		pending, err = tx.Outbox(ctx, id)
		return err
	}))
	return sp, pending
}

// storedEvents reads the spore's event log straight from the store, so
// that taking a snapshot runs no pass (and ingests nothing).
func (r *rig) storedEvents(id string) []state.Event {
	r.t.Helper()
	st := r.openStore()
	defer st.Close()
	ctx := context.Background()
	var evs []state.Event
	require.NoError(r.t, st.View(ctx, func(tx state.Tx) error {
		var err error
		evs, err = tx.Events(ctx, id, 0, 0)
		return err
	}))
	return evs
}

// settle runs reconcile until the spore is Healthy, its bridge idle,
// every line it numbered ingested and its outbox empty.
func (r *rig) settle(id string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rep, _ := r.reconcile(id)
		r.requireTruthful(id, rep.spore(r.t, id))
		s, _ := r.status(id)
		r.requireTruthful(id, s)
		if s.Effective == "Healthy" {
			st := r.bridgeStatus(id)
			sp, pending := r.record(id)
			if st.State == bridge.StateIdle && st.Queue == 0 && len(pending) == 0 && sp.BridgeSeq == st.LastSeq {
				return
			}
		}
		if time.Now().After(deadline) {
			sp, pending := r.record(id)
			r.t.Fatalf("%s did not settle within %s: status %+v, stored bridge_seq %d, %d pending", id, timeout, s, sp.BridgeSeq, len(pending))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// --- what every row asserts at its end ---

// sent is a prompt as the test sent it.
type sent struct {
	id, text string
	acked    bool // the prompt command exited 0
}

type expect struct {
	prompts []sent
	// retried are prompt ids whose turn was cut off by the fault: the
	// bridge may have started it more than once (the step it was on).
	retried map[string]bool
	// echo: the echo agent answers each prompt "echo: TEXT" once.
	echo bool
	// files in the home (relative path → content) written before the
	// faults.
	files map[string]string
}

var deliveredRE = regexp.MustCompile(`^prompt (\S+) delivered`)

type bridgeLine struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	PromptID string `json:"prompt_id"`
	Text     string `json:"text"`
	Attempt  int    `json:"attempt"`
	Session  string `json:"session_id"`
	Message  struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
}

func parseLine(t *testing.T, raw json.RawMessage) bridgeLine {
	var l bridgeLine
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &l))
	}
	return l
}

// requireIntact asserts the row's end state for spore id (see the top of
// this file). The spore must have settled.
func (r *rig) requireIntact(id string, want expect) {
	r.t.Helper()
	t := r.t
	evs := r.events(id)

	// Every numbered line exactly once, in order, as the bridge logged it.
	log := r.bridgeLog(id)
	var agent []state.Event
	for _, e := range evs {
		if e.Kind == state.KindAgent {
			agent = append(agent, e)
		}
	}
	for i, e := range agent {
		require.Equal(t, uint64(i+1), e.BridgeSeq, "agent event %d (store seq %d) has bridge_seq %d: a line is missing, repeated or out of order", i+1, e.Seq, e.BridgeSeq)
	}
	require.Len(t, agent, len(log), "the store holds %d agent lines, the bridge numbered %d", len(agent), len(log))
	for i, rec := range log {
		require.Equal(t, rec.Seq, agent[i].BridgeSeq)
		require.JSONEq(t, string(rec.Line), string(agent[i].Line), "line %d differs from the bridge's log", rec.Seq)
	}

	// Deliveries: each outbox entry delivered once; each acknowledged
	// prompt among them.
	delivered := map[string]int{}
	for _, e := range evs {
		if e.Kind == state.KindLifecycle && e.Action == "delivered" {
			m := deliveredRE.FindStringSubmatch(e.Text)
			require.NotNil(t, m, "delivered event without an id: %q", e.Text)
			delivered[m[1]]++
		}
	}
	for pid, n := range delivered {
		require.Equal(t, 1, n, "prompt %s has %d delivered events", pid, n)
	}
	promptTexts := map[string]int{}
	for _, e := range evs {
		if e.Kind == state.KindPrompt {
			promptTexts[e.Text]++
		}
	}
	// What the bridge did with each prompt, from its own lines.
	type turns struct {
		attempts []int
		text     string
	}
	started := map[string]*turns{}
	answers := map[string]int{}
	for _, e := range agent {
		l := parseLine(t, e.Line)
		switch {
		case l.Type == "bridge" && l.Subtype == "turn_started":
			tt := started[l.PromptID]
			if tt == nil {
				tt = &turns{text: l.Text}
				started[l.PromptID] = tt
			}
			tt.attempts = append(tt.attempts, l.Attempt)
		case l.Type == "assistant":
			for _, c := range l.Message.Content {
				if c.Type == "text" {
					answers[c.Text]++
				}
			}
		}
	}
	for pid, tt := range started {
		require.Equal(t, 1, delivered[pid], "the bridge ran prompt %s (%q) but the store has %d delivered events for it", pid, tt.text, delivered[pid])
		require.Equal(t, 1, promptTexts[tt.text], "the bridge ran %q; the store holds that prompt %d times", tt.text, promptTexts[tt.text])
		if !want.retried[pid] {
			// (A retried turn's first turn_started line may never have
			// been numbered: it died with the bridge before its fsync.)
			require.Equal(t, []int{1}, tt.attempts, "prompt %s (%q) was started more than once", pid, tt.text)
		}
		if want.echo && !want.retried[pid] {
			require.Equal(t, 1, answers["echo: "+tt.text], "the echo answer to %q", tt.text)
		}
	}
	for pid := range delivered {
		require.Contains(t, started, pid, "prompt %s delivered but the bridge never started a turn for it", pid)
	}
	for _, p := range want.prompts {
		if !p.acked {
			continue
		}
		require.Equal(t, 1, promptTexts[p.text], "acknowledged prompt %q is in the store %d times", p.text, promptTexts[p.text])
		if p.id != "" {
			require.Equal(t, 1, delivered[p.id], "acknowledged prompt %s (%q) delivered %d times", p.id, p.text, delivered[p.id])
			require.Contains(t, started, p.id, "acknowledged prompt %s never reached the agent", p.id)
		}
	}
	// Every prompt in the store reached the bridge once.
	byText := map[string]int{}
	for _, tt := range started {
		byText[tt.text]++
	}
	for text, n := range promptTexts {
		require.Equal(t, n, byText[text], "prompt %q: %d in the store, %d turns started for it", text, n, byText[text])
	}

	_, pending := r.record(id)
	require.Empty(t, pending, "the outbox still holds prompts")

	for rel, content := range want.files {
		b, err := os.ReadFile(filepath.Join(r.home(id), rel))
		require.NoError(t, err, "a file in the home was lost")
		require.Equal(t, content, string(b))
	}
	out := r.ok("check")
	require.Contains(t, out, "ok:", "check: %s", out)
}

func count(evs []state.Event, kind state.EventKind, action string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind && e.Action == action {
			n++
		}
	}
	return n
}

// prefix asserts that the events in before are still, unchanged, the
// start of after: nothing committed was lost or rewritten.
func requirePrefix(t *testing.T, before, after []state.Event, what string) {
	t.Helper()
	require.GreaterOrEqual(t, len(after), len(before), "%s: events were lost", what)
	for i := range before {
		b, a := before[i], after[i]
		require.Equal(t, b.Seq, a.Seq, "%s: event %d", what, i)
		require.Equal(t, b.Kind, a.Kind, "%s: event %d", what, b.Seq)
		require.Equal(t, b.Action, a.Action, "%s: event %d", what, b.Seq)
		require.Equal(t, b.Text, a.Text, "%s: event %d", what, b.Seq)
		require.Equal(t, b.BridgeSeq, a.BridgeSeq, "%s: event %d", what, b.Seq)
		require.True(t, b.At.Equal(a.At), "%s: event %d", what, b.Seq)
		if len(b.Line) > 0 {
			require.JSONEq(t, string(b.Line), string(a.Line), "%s: event %d", what, b.Seq)
		}
	}
}

// --- a man in the middle, to fault a command at an exact step ---

// bridgeProxy sits between sporectl and one bridge (the spore's run file
// is pointed at it), forwarding everything, so a test can act at the
// exact moment a command is between two steps of its pass.
type bridgeProxy struct {
	t      *testing.T
	srv    *http.Server
	addr   string
	target string

	mu sync.Mutex
	// refusePrompts answers POST /v1/prompts 503 without forwarding it.
	refusePrompts bool
	// afterAccept runs when the bridge has accepted a prompt (202), before
	// the caller hears of it.
	afterAccept func(bridge.PromptAccepted)
	// afterEvents runs when the bridge has answered GET /v1/events, before
	// the caller hears of it.
	afterEvents func()
	// seen is every request the proxy was asked, in order, for a
	// failure's report.
	seen []string
}

// proxyBridge puts a proxy in front of the spore's running bridge: its
// run file then records that bridge's process at the proxy's address.
// The bridge is the one the runtime locates, which need not be the one
// the run file recorded: a reconcile SIGKILLed between spawning a bridge
// and recording it leaves the run file naming a dead one, and the runtime
// finds the live one by its mark (a run file that does not describe a
// live process would send every command past the proxy, to it).
func (r *rig) proxyBridge(id string) *bridgeProxy {
	r.t.Helper()
	path := filepath.Join(r.root, "run", id+".json")
	live := r.bridgePIDs(id)
	require.Len(r.t, live, 1, "the running bridges of %s", id)
	pid := live[0]
	target, startTime := bridgeProcess(r.t, pid)
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(r.t, err)
	doc := map[string]any{"pid": pid, "start_time": startTime, "boot_id": strings.TrimSpace(string(bootID)),
		"started": time.Now().UTC()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(r.t, err)
	p := &bridgeProxy{t: r.t, addr: ln.Addr().String(), target: target}
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		p.mu.Lock()
		accept, events := p.afterAccept, p.afterEvents
		p.mu.Unlock()
		switch {
		case req.Method == http.MethodPost && req.URL.Path == "/v1/prompts" && resp.StatusCode == http.StatusAccepted && accept != nil:
			body, err := readAll(resp)
			if err != nil {
				return err
			}
			var a bridge.PromptAccepted
			_ = json.Unmarshal(body, &a)
			accept(a)
		case req.Method == http.MethodGet && req.URL.Path == "/v1/events" && events != nil:
			events()
		}
		return nil
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p.mu.Lock()
		refuse := p.refusePrompts
		p.seen = append(p.seen, req.Method+" "+req.URL.Path)
		p.mu.Unlock()
		if refuse && req.Method == http.MethodPost && req.URL.Path == "/v1/prompts" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"refused by the test's proxy"}`))
			return
		}
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	doc["addr"] = p.addr
	writeJSONFile(r.t, path, doc)
	r.t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

// bridgeProcess reads a bridge process's address (its --addr) and its
// start time (field 22 of /proc/PID/stat, which a run file records).
func bridgeProcess(t *testing.T, pid int) (addr string, startTime uint64) {
	t.Helper()
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	require.NoError(t, err)
	args := strings.Split(string(cmdline), "\x00")
	i := slices.Index(args, "--addr")
	require.True(t, i >= 0 && i+1 < len(args), "bridge %d has no --addr: %q", pid, args)
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	require.NoError(t, err)
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	require.Greater(t, len(f), 19, "/proc/%d/stat", pid)
	startTime, err = strconv.ParseUint(f[19], 10, 64)
	require.NoError(t, err)
	return args[i+1], startTime
}

// detach points the run file back at the bridge (if it is still the one
// the proxy was put in front of).
func (p *bridgeProxy) detach(r *rig, id string) {
	p.t.Helper()
	path := filepath.Join(r.root, "run", id+".json")
	b, err := os.ReadFile(path)
	require.NoError(p.t, err)
	var doc map[string]any
	require.NoError(p.t, json.Unmarshal(b, &doc))
	if doc["addr"] == p.addr {
		doc["addr"] = p.target
		writeJSONFile(p.t, path, doc)
	}
}

func (p *bridgeProxy) set(fn func(p *bridgeProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func readAll(resp *http.Response) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	return buf.Bytes(), err
}

// writeJSONFile replaces path atomically (as the runtime writes run files).
func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	tmp := path + ".test-tmp"
	require.NoError(t, os.WriteFile(tmp, b, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// killOnCue prepares a command that the test SIGKILLs on a cue (from a
// proxy hook, at the step the test wants): start runs it, kill (safe from
// any goroutine, once) SIGKILLs it and gives the signal a moment to land
// before the hook lets the bridge's answer through, wait waits for it (a
// result code of -9 says it was killed).
func (r *rig) killOnCue(args ...string) (start, kill func(), wait func() cmdResult) {
	c := r.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	done := make(chan error, 1)
	started := make(chan *os.Process, 1)
	start = func() {
		require.NoError(r.t, c.Start())
		started <- c.Process
		go func() { done <- c.Wait() }()
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			proc := <-started
			_ = proc.Signal(syscall.SIGKILL)
			time.Sleep(20 * time.Millisecond)
		})
	}
	wait = func() cmdResult {
		r.t.Helper()
		var err error
		select {
		case err = <-done:
		case <-time.After(commandTimeout):
			_ = c.Process.Kill()
			r.t.Fatalf("sporectl %v did not end", args)
		}
		res := cmdResult{stdout: out.String(), stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.code = -int(ws.Signal())
			} else {
				res.code = ee.ExitCode()
			}
		}
		return res
	}
	return start, kill, wait
}

// --- the rows ---

// TestRecoveryCommandKilled — row "a sporectl command, SIGKILLed at any
// point": prompt and reconcile processes are killed at random moments,
// many times; after each, the next command carries on (check is clean,
// status Healthy), and in the end only the killed commands are lost: every
// prompt that reached the store was delivered exactly once, every
// acknowledged one among them.
func TestRecoveryCommandKilled(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-cmd"
	r.wake(id)
	files := map[string]string{"work/notes.txt": "written before the faults\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var prompts []sent
	killed := 0
	const n = 80
	for i := 0; i < n; i++ {
		// The commands take a few milliseconds: kill anywhere in them.
		delay := time.Duration(rng.IntN(15_000)) * time.Microsecond
		if rng.IntN(3) < 2 {
			text := fmt.Sprintf("prompt %d of the kill loop", i)
			res, k := r.runKilledAfter(delay, "prompt", "-o", "json", id, text)
			p := sent{text: text}
			if k {
				killed++
			} else {
				require.Equal(t, 0, res.code, "prompt after a killed command: %s", res)
				var out struct{ ID, State string }
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), "%s", res)
				p.id, p.acked = out.ID, true
			}
			prompts = append(prompts, p)
		} else {
			res, k := r.runKilledAfter(delay, "reconcile", id)
			if k {
				killed++
			} else {
				require.Equal(t, 0, res.code, "reconcile after a killed command: %s", res)
			}
		}
		r.ok("check")
		s, code := r.status(id)
		require.Equal(t, "Healthy", s.Effective, "the spore never died: %+v", s)
		require.Equal(t, 0, code)
	}
	t.Logf("%d of %d commands SIGKILLed", killed, n)
	require.Positive(t, killed, "no command was killed: the delays are too long")
	r.settle(id, 60*time.Second)
	inStore := map[string]bool{}
	for _, e := range r.events(id) {
		if e.Kind == state.KindPrompt {
			inStore[e.Text] = true
		}
	}
	late := 0
	for _, p := range prompts {
		if !p.acked && inStore[p.text] {
			late++
		}
	}
	t.Logf("%d killed prompts had committed (and were delivered by a later command)", late)
	r.requireIntact(id, expect{prompts: prompts, echo: true, files: files})
}

// TestRecoveryReconcileKilled — row "reconcile, SIGKILLed mid-pass": a
// colony with lines to ingest, prompts to deliver and a dead spore to
// restart; reconcile is killed at random moments and at exact steps (after
// the bridge answered its ingest, after a bridge accepted a delivery).
// After each kill check is clean and every event committed before is
// still there, unchanged; the next reconcile carries on.
func TestRecoveryReconcileKilled(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	ids := []string{"rec-pass-a", "rec-pass-b", "rec-pass-c"}
	files := map[string]string{"work/notes.txt": "written before the faults\n"}
	for _, id := range ids {
		r.wake(id)
		for rel, c := range files {
			r.writeHome(id, rel, c)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	prompts := map[string][]sent{}
	send := func(id, text string) {
		pid, st := r.prompt(id, text)
		prompts[id] = append(prompts[id], sent{id: pid, text: text, acked: true})
		if st == "delivered" || st == "queued" {
			r.waitIdle(id, 10*time.Second)
		}
	}
	snapshot := func() map[string][]state.Event {
		out := map[string][]state.Event{}
		for _, id := range ids {
			out[id] = r.storedEvents(id)
		}
		return out
	}
	afterKill := func(before map[string][]state.Event, what string) {
		t.Helper()
		r.ok("check")
		after := snapshot()
		for _, id := range ids {
			requirePrefix(t, before[id], after[id], what+": "+id)
		}
	}
	killed := 0
	for i := 0; i < 9; i++ {
		for _, id := range ids {
			send(id, fmt.Sprintf("round %d to %s", i, id))
		}
		// One spore dies each round, with a prompt waiting for it.
		dead := ids[i%len(ids)]
		if s, _ := r.status(dead); s.Effective == "Healthy" {
			r.killBridge(dead)
			r.requireDead(dead)
		}
		send(dead, fmt.Sprintf("round %d to %s while it is dead", i, dead))
		before := snapshot()
		delay := time.Duration(rng.IntN(80_000)) * time.Microsecond
		res, k := r.runKilledAfter(delay, "reconcile")
		if k {
			killed++
		} else {
			require.Contains(t, []int{0, 3}, res.code, "%s", res)
		}
		afterKill(before, fmt.Sprintf("round %d, reconcile killed after %s", i, delay))
		// The killed pass left a spore started or not: the next pass
		// carries on from whatever it finds.
		for _, id := range ids {
			s, _ := r.status(id)
			r.requireTruthful(id, s)
		}
	}
	t.Logf("%d of 9 reconciles SIGKILLed at random", killed)

	// At exact steps: between ingest and commit, between delivery and
	// commit.
	for _, id := range ids {
		r.settle(id, 60*time.Second)
	}
	victim := ids[0]
	p := r.proxyBridge(victim)
	p.set(func(p *bridgeProxy) { p.refusePrompts = true })
	pid, st := r.prompt(victim, "delivered by the pass that dies")
	if st != "waiting" {
		// Seen once in CI (seed 1796660896009973955) and not since: say
		// where the delivery went.
		runFile, _ := os.ReadFile(filepath.Join(r.root, "run", victim+".json"))
		p.mu.Lock()
		seen := slices.Clone(p.seen)
		p.mu.Unlock()
		t.Logf("the prompt was %s past a proxy that refuses prompts: run file %s; the proxy (%s, in front of %s) was asked %q; events %+v",
			st, runFile, p.addr, p.target, seen, r.storedEvents(victim))
	}
	require.Equal(t, "waiting", st)
	prompts[victim] = append(prompts[victim], sent{id: pid, text: "delivered by the pass that dies", acked: true})
	p.set(func(p *bridgeProxy) { p.refusePrompts = false })

	// First killed after the bridge accepted the delivery, then (the
	// accepted prompt's turn having numbered new lines) after the bridge
	// answered the next pass's ingest.
	for _, step := range []string{"deliver", "ingest"} {
		if step == "ingest" {
			r.waitIdle(victim, 10*time.Second)
			sp, _ := r.record(victim)
			require.Less(t, sp.BridgeSeq, r.bridgeStatus(victim).LastSeq, "lines to ingest")
		}
		before := snapshot()
		start, kill, wait := r.killOnCue("reconcile")
		p.set(func(p *bridgeProxy) {
			p.afterEvents, p.afterAccept = nil, nil
			if step == "ingest" {
				p.afterEvents = kill
			} else {
				p.afterAccept = func(bridge.PromptAccepted) { kill() }
			}
		})
		start()
		res := wait()
		require.Equal(t, -int(syscall.SIGKILL), res.code, "reconcile should have been killed at %s: %s", step, res)
		afterKill(before, "reconcile killed after "+step)
		require.Len(t, r.storedEvents(victim), len(before[victim]), "a pass killed after %s committed something", step)
		_, pending := r.record(victim)
		require.Len(t, pending, 1, "the delivered prompt is still in the outbox")
	}
	sp, _ := r.record(victim)
	require.Less(t, sp.BridgeSeq, r.bridgeStatus(victim).LastSeq, "the killed pass ingested nothing")
	p.set(func(p *bridgeProxy) { p.afterEvents, p.afterAccept = nil, nil })
	p.detach(r, victim)

	for _, id := range ids {
		r.settle(id, 60*time.Second)
	}
	evs := r.events(victim)
	require.Condition(t, func() bool {
		for _, e := range evs {
			if e.Action == "delivered" && strings.Contains(e.Text, pid) && strings.Contains(e.Text, "the bridge had it already") {
				return true
			}
		}
		return false
	}, "the prompt whose pass died after delivering is redelivered as a duplicate")
	for _, id := range ids {
		r.requireIntact(id, expect{prompts: prompts[id], echo: true, files: files})
	}
}

// TestRecoveryBridgeKilled — row "the bridge process": SIGKILL the bridge;
// status says Dead (never Healthy, never Diverged); reconcile restarts it
// on the same home; the lines it numbered before dying, which no command
// had ingested yet, are ingested after the restart.
func TestRecoveryBridgeKilled(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-bridge"
	r.wake(id)
	files := map[string]string{"work/notes.txt": "written before the bridge died\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	pid1, st := r.prompt(id, "before the bridge dies")
	require.Equal(t, "delivered", st)
	r.waitIdle(id, 10*time.Second)
	numbered := r.bridgeLog(id)
	sp, _ := r.record(id)
	require.Less(t, sp.BridgeSeq, uint64(len(numbered)), "the turn's lines must not be in the store yet for this row to prove anything")

	old := r.killBridge(id)
	require.Empty(t, r.procs(id))
	s := r.requireDead(id)
	require.Equal(t, "Exited", s.Observed.Reason)
	sp, _ = r.record(id)
	require.Less(t, sp.BridgeSeq, uint64(len(numbered)), "nothing could be ingested from a dead bridge")

	rep, code := r.reconcile()
	require.Equal(t, 0, code, "restarted and coming up needs nobody: %+v", rep)
	require.Equal(t, "Starting", rep.spore(t, id).Effective, "the table is the spore after the pass acted")
	require.True(t, rep.did(id, "restart"), "reconcile restarts a dead spore: %+v", rep.Actions)
	r.waitHealthy(id, 30*time.Second)
	require.NotEqual(t, old, r.runFile(id).PID, "a new bridge")

	r.settle(id, 30*time.Second)
	evs := r.events(id)
	for _, rec := range numbered {
		require.Contains(t, agentSeqs(evs), rec.Seq, "line %d numbered before the bridge died was not ingested", rec.Seq)
	}
	// The new bridge carried on the same log, in the same home.
	var started []bridgeLine
	for _, e := range evs {
		if l := parseLine(t, e.Line); l.Subtype == "bridge_started" {
			started = append(started, l)
		}
	}
	require.Len(t, started, 2)
	require.Equal(t, started[0].Session, started[1].Session, "the same session")
	require.Equal(t, 1, count(evs, state.KindLifecycle, "restart"))

	pid2, st := r.prompt(id, "after the restart")
	require.Equal(t, "delivered", st)
	r.settle(id, 30*time.Second)
	r.requireIntact(id, expect{echo: true, files: files, prompts: []sent{
		{id: pid1, text: "before the bridge dies", acked: true}, {id: pid2, text: "after the restart", acked: true}}})
}

// TestRecoveryCrashLoop — row "a spore that dies every time": its bridge
// cannot start (a complete but corrupt record in its log makes it refuse
// to open it). Repeated reconciles back off, then the breaker opens:
// effective Error, no more starts, the events show each restart and one
// "opened". After the home is repaired, `reset` lets it start again.
func TestRecoveryCrashLoop(t *testing.T) {
	const failures = 3
	// Backoffs of 2s and 4s: a reconcile that finds a respawn not due yet
	// must come inside them, and on a loaded machine one reconcile
	// process (start, pass, exit) could outlast a 1s backoff.
	r := newRig(t, nil, "--agent", "echo", "--backoff-initial", "2s", "--backoff-max", "4s",
		"--breaker-failures", strconv.Itoa(failures), "--breaker-window", "15m")
	id := "rec-loop"
	r.wake(id)
	files := map[string]string{"work/notes.txt": "written before the crash loop\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	pid1, _ := r.prompt(id, "before the crash loop")
	r.settle(id, 30*time.Second)
	starts := count(r.events(id), state.KindLifecycle, "start") // the wake's

	// Damage the log: a complete record that is not one.
	logPath := filepath.Join(r.home(id), ".sporectl-bridge", "events.log")
	good, err := os.Stat(logPath)
	require.NoError(t, err)
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("9999 not-a-time 00000000 {\"type\":\"damage\"}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r.killBridge(id)
	r.requireDead(id)

	// Reconcile as cron would, until the breaker opens.
	deadline := time.Now().Add(60 * time.Second)
	waited := false
	for {
		rep, code := r.reconcile()
		s := rep.spore(t, id)
		require.Contains(t, []string{"Dead", "Suspect", "Error", "Starting"}, s.Effective, "a spore whose bridge cannot start: %+v", s)
		switch {
		case s.Effective == "Error":
			require.Equal(t, 3, code, "an open breaker needs a person: %+v", s)
		case s.Effective == "Starting", rep.did(id, "wait"):
			// Restarted, or waiting out its backoff: the breaker is its
			// grace (docs/exit-codes.md).
			require.Equal(t, 0, code, "%+v", s)
		}
		if rep.did(id, "wait") {
			waited = true
		}
		st, _ := r.status(id)
		require.NotContains(t, []string{"Healthy", "Diverged"}, st.Effective, "%+v", st)
		if st.Effective == "Error" {
			require.Contains(t, st.Reason, "reset")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the breaker did not open within 60s: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.True(t, waited, "some reconcile found the respawn not due yet and waited")
	evs := r.events(id)
	require.Equal(t, failures-1, count(evs, state.KindLifecycle, "restart"), "restarts before the breaker opens")
	require.Equal(t, 1, count(evs, state.KindBreaker, "opened"))
	// Backoff: each respawn waited for its timer (2s, then 4s).
	var restarts []time.Time
	var opened time.Time
	for _, e := range evs {
		switch {
		case e.Kind == state.KindLifecycle && e.Action == "restart":
			restarts = append(restarts, e.At)
		case e.Kind == state.KindBreaker && e.Action == "opened":
			opened = e.At
		}
	}
	require.GreaterOrEqual(t, restarts[1].Sub(restarts[0]), 2*time.Second, "the second respawn waited for the first backoff")
	require.GreaterOrEqual(t, opened.Sub(restarts[1]), 4*time.Second, "the third crash was judged after the second backoff")

	// Open: nothing more is started, however often reconcile runs.
	time.Sleep(4500 * time.Millisecond) // past any backoff
	for i := 0; i < 3; i++ {
		rep, code := r.reconcile()
		require.Equal(t, 3, code)
		require.Equal(t, "Error", rep.spore(t, id).Effective)
		require.False(t, rep.did(id, "start") || rep.did(id, "restart"), "%+v", rep.Actions)
	}
	require.Empty(t, r.procs(id), "nothing runs while the breaker is open")
	after := r.events(id)
	require.Equal(t, failures-1, count(after, state.KindLifecycle, "restart"))
	require.Equal(t, starts, count(after, state.KindLifecycle, "start"), "no start since the loop began")
	require.Equal(t, 1, count(after, state.KindBreaker, "opened"), "opened is recorded once")
	s, code := r.status(id)
	require.Equal(t, "Error", s.Effective)
	require.Equal(t, 3, code)
	r.ok("check")

	// Repair the home, reset, and it starts: a first start, not a crash.
	require.NoError(t, os.Truncate(logPath, good.Size()))
	r.ok("reset", id)
	rep, _ := r.reconcile()
	require.True(t, rep.did(id, "start"), "after reset the next pass starts it: %+v", rep.Actions)
	r.waitHealthy(id, 30*time.Second)
	pid2, _ := r.prompt(id, "after the reset")
	r.settle(id, 30*time.Second)
	evs = r.events(id)
	require.Equal(t, 1, count(evs, state.KindBreaker, "reset"))
	require.Equal(t, starts+1, count(evs, state.KindLifecycle, "start"), "reset gives a first start, not a counted restart")
	require.Equal(t, failures-1, count(evs, state.KindLifecycle, "restart"))
	r.requireIntact(id, expect{echo: true, files: files, prompts: []sent{
		{id: pid1, text: "before the crash loop", acked: true}, {id: pid2, text: "after the reset", acked: true}}})
}

// TestRecoveryPromptInFlight — row "a prompt in flight when any of the
// above dies": the prompt stays in the outbox and the next pass delivers
// it exactly once, the bridge answering "duplicate" if it had it:
//   - sent while the bridge is dead;
//   - the prompt command SIGKILLed just after the bridge accepted it;
//   - reconcile SIGKILLed just after the bridge accepted it;
//   - the bridge SIGKILLed just after it accepted it.
func TestRecoveryPromptInFlight(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-inflight"
	r.wake(id)
	files := map[string]string{"work/notes.txt": "written before the faults\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	var prompts []sent
	retried := map[string]bool{}
	pendingText := func(text string) string {
		t.Helper()
		_, pending := r.record(id)
		for _, e := range pending {
			if e.Text == text {
				return e.ID
			}
		}
		t.Fatalf("prompt %q is not in the outbox (%d pending)", text, len(pending))
		return ""
	}
	duplicateDelivered := func(pid string) {
		t.Helper()
		for _, e := range r.events(id) {
			if e.Action == "delivered" && strings.HasPrefix(e.Text, "prompt "+pid+" delivered") {
				require.Contains(t, e.Text, "the bridge had it already", "redelivery of %s", pid)
				return
			}
		}
		t.Fatalf("prompt %s not delivered", pid)
	}

	// 1. The bridge is dead when the prompt is sent.
	r.killBridge(id)
	r.requireDead(id)
	text := "sent while the bridge is dead"
	pid, st := r.prompt(id, text)
	require.Equal(t, "waiting", st)
	require.Equal(t, pid, pendingText(text))
	r.requireDead(id)
	rep, _ := r.reconcile()
	require.True(t, rep.did(id, "restart"), "%+v", rep.Actions)
	r.settle(id, 30*time.Second)
	prompts = append(prompts, sent{id: pid, text: text, acked: true})

	// 2. The prompt command dies after the bridge accepted, before it
	// could mark the entry delivered.
	text = "prompt killed after the bridge accepted it"
	p := r.proxyBridge(id)
	start, kill, wait := r.killOnCue("prompt", "-o", "json", id, text)
	p.set(func(p *bridgeProxy) { p.afterAccept = func(bridge.PromptAccepted) { kill() } })
	start()
	res := wait()
	require.Equal(t, -int(syscall.SIGKILL), res.code, "%s", res)
	p.set(func(p *bridgeProxy) { p.afterAccept = nil })
	pid = pendingText(text)
	ps, err := r.bridge(id).PromptState(context.Background(), pid)
	require.NoError(t, err, "the bridge has the prompt")
	require.NotEmpty(t, ps.State)
	r.ok("check")
	p.detach(r, id)
	r.settle(id, 30*time.Second)
	duplicateDelivered(pid)
	prompts = append(prompts, sent{id: pid, text: text}) // never acknowledged, still delivered once

	// 3. Reconcile dies after the bridge accepted what it delivered.
	text = "reconcile killed after the bridge accepted it"
	p = r.proxyBridge(id)
	p.set(func(p *bridgeProxy) { p.refusePrompts = true })
	pid, st = r.prompt(id, text)
	require.Equal(t, "waiting", st, "the proxy refused the prompt's delivery")
	s, _ := r.status(id)
	require.Equal(t, "Healthy", s.Effective)
	start, kill, wait = r.killOnCue("reconcile")
	p.set(func(p *bridgeProxy) {
		p.refusePrompts = false
		p.afterAccept = func(bridge.PromptAccepted) { kill() }
	})
	start()
	res = wait()
	require.Equal(t, -int(syscall.SIGKILL), res.code, "%s", res)
	p.set(func(p *bridgeProxy) { p.afterAccept = nil })
	require.Equal(t, pid, pendingText(text), "still in the outbox")
	r.ok("check")
	p.detach(r, id)
	r.settle(id, 30*time.Second)
	duplicateDelivered(pid)
	prompts = append(prompts, sent{id: pid, text: text, acked: true})

	// 4. The bridge dies as it accepts: the prompt is in its queue journal
	// (fsync'd before the 202), the command saw it delivered, and the new
	// bridge runs it (again, if the old one had started it).
	text = "the bridge killed as it accepts"
	p = r.proxyBridge(id)
	bpid := r.runFile(id).PID
	p.set(func(p *bridgeProxy) {
		p.afterAccept = func(bridge.PromptAccepted) { _ = syscall.Kill(bpid, syscall.SIGKILL) }
	})
	pid, st = r.prompt(id, text)
	require.Equal(t, "delivered", st)
	waitGone(t, bpid)
	p.set(func(p *bridgeProxy) { p.afterAccept = nil })
	r.requireDead(id)
	retried[pid] = true
	// A second crash within the backoff: reconcile (as cron would) until
	// the respawn is due; until then it stays Dead.
	r.reconcileUntil(id, "restart", 30*time.Second)
	r.settle(id, 30*time.Second)
	prompts = append(prompts, sent{id: pid, text: text, acked: true})
	ran := 0
	for _, e := range r.events(id) {
		if l := parseLine(t, e.Line); l.Subtype == "turn_started" && l.PromptID == pid {
			ran++
		}
	}
	require.Positive(t, ran, "the new bridge ran the prompt the old one had accepted")

	r.requireIntact(id, expect{prompts: prompts, retried: retried, echo: true, files: files})
}

// TestRecoveryConcurrentDelivery — "delivered exactly once" when passes
// race, as they do when a person prompts while cron reconciles: each round
// one prompt and two reconciles run at once. Every prompt reaches the
// bridge once (its idempotency key), and the store must record one
// "delivered" event for it — a second pass that posts the same pending
// entry gets "duplicate" and must not record a second delivery.
func TestRecoveryConcurrentDelivery(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-race"
	r.wake(id)
	var mu sync.Mutex
	var prompts []sent
	for i := 0; i < 20; i++ {
		var wg sync.WaitGroup
		text := fmt.Sprintf("racing prompt %d", i)
		wg.Add(3)
		go func() {
			defer wg.Done()
			res, err := r.runErr("prompt", "-o", "json", id, text)
			var out struct{ ID string }
			if err != nil || res.code != 0 || json.Unmarshal([]byte(res.stdout), &out) != nil {
				t.Errorf("prompt %q: %v %s", text, err, res)
				return
			}
			mu.Lock()
			prompts = append(prompts, sent{id: out.ID, text: text, acked: true})
			mu.Unlock()
		}()
		for j := 0; j < 2; j++ {
			go func() {
				defer wg.Done()
				if res, err := r.runErr("reconcile"); err != nil || res.code != 0 {
					t.Errorf("reconcile: %v %s", err, res)
				}
			}()
		}
		wg.Wait()
	}
	r.settle(id, 60*time.Second)
	r.requireIntact(id, expect{prompts: prompts, echo: true})
}

// TestRecoveryBridgeLogLost — the bridge-log-lost situation
// (docs/recovery.md): the spore's bridge directory is wiped while it is
// dead, so the restarted bridge numbers a new log from 1. That is not a
// crash loop and not silently accepted: status says Suspect/BridgeLogLost
// and nothing of the new log is ingested — however long it grows — until
// `reset`, which accepts it: the store then holds the old log's lines,
// unchanged, followed by every line of the new log once, in order.
func TestRecoveryBridgeLogLost(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-lost"
	r.wake(id)
	var prompts []sent
	for i := 0; i < 3; i++ {
		text := fmt.Sprintf("into the old log %d", i)
		pid, _ := r.prompt(id, text)
		prompts = append(prompts, sent{id: pid, text: text, acked: true})
		r.waitIdle(id, 10*time.Second)
	}
	r.settle(id, 30*time.Second)
	oldLog := r.bridgeLog(id)
	before := r.events(id)

	r.killBridge(id)
	require.NoError(t, os.RemoveAll(filepath.Join(r.home(id), ".sporectl-bridge")))
	r.requireDead(id)
	r.reconcileUntil(id, "restart", 30*time.Second)
	r.waitIdle(id, 30*time.Second)
	lost := func(when string) {
		t.Helper()
		s, code := r.status(id)
		require.Equal(t, "Suspect", s.Effective, "%s: %+v", when, s)
		require.Equal(t, 3, code)
		require.Contains(t, s.Reason, "log is behind", "%s: %+v", when, s)
		sp, _ := r.record(id)
		require.Equal(t, uint64(len(oldLog)), sp.BridgeSeq, "%s: nothing of the new log is ingested before reset", when)
	}
	lost("after the restart")

	// The new log grows past the old one's length: still lost, still not
	// ingested. (BUG today: once the new log is longer than the old one,
	// ingest takes its lines after the old length as if they continued the
	// old log, and status turns Healthy without reset.)
	for i := 0; len(r.bridgeLog(id)) <= len(oldLog)+4; i++ {
		require.Less(t, i, 20, "the new log does not grow")
		text := fmt.Sprintf("into the new log %d", i)
		pid, _ := r.prompt(id, text)
		prompts = append(prompts, sent{id: pid, text: text, acked: true})
		r.waitIdle(id, 10*time.Second)
		lost(fmt.Sprintf("after %d prompts to the new log", i+1))
	}

	r.ok("reset", id)
	r.settle(id, 30*time.Second)
	after := r.events(id)
	requirePrefix(t, before, after, "reset keeps the old log's lines")
	var agent []state.Event
	for _, e := range after[len(before):] {
		if e.Kind == state.KindAgent {
			agent = append(agent, e)
		}
	}
	newLog := r.bridgeLog(id)
	require.Len(t, agent, len(newLog), "after reset the store holds the new log once")
	for i, rec := range newLog {
		require.Equal(t, rec.Seq, agent[i].BridgeSeq)
		require.JSONEq(t, string(rec.Line), string(agent[i].Line))
	}
	delivered := map[string]int{}
	for _, e := range after {
		if m := deliveredRE.FindStringSubmatch(e.Text); e.Action == "delivered" && m != nil {
			delivered[m[1]]++
		}
	}
	for _, p := range prompts {
		require.Equal(t, 1, delivered[p.id], "prompt %q", p.text)
	}
	require.Equal(t, 1, count(after, state.KindBreaker, "reset"))
	r.ok("check")
}
