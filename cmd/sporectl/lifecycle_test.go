package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/local"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

type statusDoc struct {
	Spores []struct {
		ID       string `json:"id"`
		Desired  string `json:"desired"`
		Observed struct {
			Pod      string `json:"pod"`
			Bridge   string `json:"bridge"`
			Activity string `json:"activity"`
		} `json:"observed"`
		Effective string `json:"effective"`
		Reason    string `json:"reason"`
	} `json:"spores"`
}

// status runs `status -o json ID` and returns the entry and exit code.
func status(t *testing.T, store, id string) (statusDoc, int) {
	t.Helper()
	cmd := sporectl(store, "status", "-o", "json", id)
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var doc statusDoc
	require.NoError(t, json.Unmarshal(out, &doc), "status output: %s", out)
	require.Len(t, doc.Spores, 1)
	return doc, code
}

func bridgePID(t *testing.T, store, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, "run", id+".json"))
	require.NoError(t, err)
	var rf struct{ PID int }
	require.NoError(t, json.Unmarshal(b, &rf))
	return rf.PID
}

// TestLocalLifecycle drives a spore through wake, sleep, stop and delete
// on the local runtime with the echo agent, observing for real each time.
func TestLocalLifecycle(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo")
	t.Cleanup(func() { _ = sporectl(store, "delete", "echo-1").Run() })
	runOK(t, store, "create", "echo-1", "--wake")
	// Start means "requested": wait for the bridge to answer.
	runOK(t, store, "wake", "echo-1", "--wait", "15s")

	doc, code := status(t, store, "echo-1")
	require.Equal(t, 0, code)
	s := doc.Spores[0]
	require.Equal(t, "Running", s.Desired)
	require.Equal(t, "Running", s.Observed.Pod)
	require.Equal(t, "Up", s.Observed.Bridge)
	require.Equal(t, "Healthy", s.Effective)

	// Waking a running spore leaves it alone: same bridge, same tokens.
	apiToken := filepath.Join(store, "homes", "echo-1", ".sporectl-bridge", "api-token")
	tokBefore, err := os.ReadFile(apiToken)
	require.NoError(t, err)
	pidBefore := bridgePID(t, store, "echo-1")
	runOK(t, store, "wake", "echo-1")
	tokAfter, err := os.ReadFile(apiToken)
	require.NoError(t, err)
	require.Equal(t, tokBefore, tokAfter, "a running spore's token was rotated under it")
	require.Equal(t, pidBefore, bridgePID(t, store, "echo-1"))
	doc, _ = status(t, store, "echo-1")
	require.Equal(t, "Healthy", doc.Spores[0].Effective)

	// SIGKILL the bridge: observed for real, not remembered.
	pid := bridgePID(t, store, "echo-1")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		doc, code := status(t, store, "echo-1")
		return code == 3 && doc.Spores[0].Effective == "Dead"
	}, 5*time.Second, 50*time.Millisecond)

	runOK(t, store, "wake", "echo-1", "--wait", "15s")
	doc, _ = status(t, store, "echo-1")
	require.Equal(t, "Healthy", doc.Spores[0].Effective)
	require.NotEqual(t, pid, bridgePID(t, store, "echo-1"))

	runOK(t, store, "sleep", "echo-1")
	doc, code = status(t, store, "echo-1")
	require.Equal(t, 0, code)
	require.Equal(t, "Paused", doc.Spores[0].Effective)
	require.Equal(t, "Absent", doc.Spores[0].Observed.Pod)
	require.DirExists(t, filepath.Join(store, "homes", "echo-1"), "sleep keeps the home")

	runOK(t, store, "stop", "echo-1")
	doc, _ = status(t, store, "echo-1")
	require.Equal(t, "Stopped", doc.Spores[0].Effective)

	runOK(t, store, "delete", "echo-1", "--purge-home")
	require.NoDirExists(t, filepath.Join(store, "homes", "echo-1"))
	runOK(t, store, "check")
}

// TestConcurrentWakes: wakes racing from several processes start one bridge.
func TestConcurrentWakes(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo")
	runOK(t, store, "create", "racer")
	t.Cleanup(func() { _ = sporectl(store, "delete", "racer").Run() })
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := sporectl(store, "wake", "racer").CombinedOutput()
			if err != nil {
				t.Errorf("wake: %v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	pid := bridgePID(t, store, "racer")
	// Count bridges serving this spore's home: the processes marked with
	// its id and its home, which is under this test's own store (parallel
	// copies of the suite have spores called racer too).
	require.Equal(t, []int{pid}, local.MarkedProcesses("racer", filepath.Join(store, "homes", "racer")),
		"one bridge runs, the recorded one")

	// The store holds the hash of the token the spore actually got.
	tok, err := os.ReadFile(filepath.Join(store, "homes", "racer", ".sporectl-bridge", "api-token"))
	require.NoError(t, err)
	ctx := context.Background()
	st, err := dirstore.Open(ctx, store, dirstore.Options{})
	require.NoError(t, err)
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		h, err := tx.TokenHash(ctx, "racer")
		require.NoError(t, err)
		require.True(t, h.Matches(strings.TrimSpace(string(tok))), "stored hash and the spore's token disagree")
		return nil
	}))
}

// TestSleepEndsWhatADeadSporeLeft: a spore is awake exactly when its
// process tree exists. A spore whose bridge died leaves a run file and, at
// times, marked processes (a tool that left the bridge's session); it is
// observed Failed. `sleep` ends those and removes the run file, keeping
// the home: status then says Paused with nothing there.
func TestSleepEndsWhatADeadSporeLeft(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo")
	t.Cleanup(func() { _ = sporectl(store, "delete", "dead-1").Run() })
	runOK(t, store, "create", "dead-1", "--wake")
	runOK(t, store, "wake", "dead-1", "--wait", "15s")

	// A tool of the spore's in a session of its own, marked as the
	// spore's processes are.
	home := filepath.Join(store, "homes", "dead-1")
	tool := exec.Command("sleep", "600")
	tool.Env = append(os.Environ(), "SPORECTL_SPORE_ID=dead-1", "HOME="+home)
	tool.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, tool.Start())
	toolDone := make(chan struct{})
	go func() { _ = tool.Wait(); close(toolDone) }()
	t.Cleanup(func() { _ = tool.Process.Kill(); <-toolDone })

	require.NoError(t, syscall.Kill(bridgePID(t, store, "dead-1"), syscall.SIGKILL))
	require.Eventually(t, func() bool {
		doc, _ := status(t, store, "dead-1")
		return doc.Spores[0].Observed.Pod == "Failed"
	}, 5*time.Second, 50*time.Millisecond)

	runOK(t, store, "sleep", "dead-1")
	select {
	case <-toolDone:
	case <-time.After(5 * time.Second):
		t.Fatal("sleep left the dead spore's tool running")
	}
	require.NoFileExists(t, filepath.Join(store, "run", "dead-1.json"), "sleep leaves no run file")
	require.DirExists(t, home, "sleep keeps the home")
	doc, code := status(t, store, "dead-1")
	require.Equal(t, 0, code)
	require.Equal(t, "Paused", doc.Spores[0].Effective)
	require.Equal(t, "Absent", doc.Spores[0].Observed.Pod)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestOrphans: a running spore whose record vanished from the store is
// listed by status as an orphan (exit 3), never removed by it, and removed
// only by `delete --orphan`.
func TestOrphans(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo")
	runOK(t, store, "create", "lost", "--wake")
	runOK(t, store, "create", "kept")
	t.Cleanup(func() { _ = sporectl(store, "delete", "--orphan", "lost").Run() })
	pid := bridgePID(t, store, "lost")

	// Remove the record behind sporectl's back.
	ctx := context.Background()
	st, err := dirstore.Open(ctx, store, dirstore.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "lost") }))

	cmd := sporectl(store, "status", "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	require.Equal(t, 3, cmd.ProcessState.ExitCode())
	var doc struct {
		Orphans []string `json:"orphans"`
	}
	require.NoError(t, json.Unmarshal(out, &doc))
	require.Equal(t, []string{"lost"}, doc.Orphans)
	require.Contains(t, stderr.String(), "delete --orphan")
	require.NoError(t, syscall.Kill(pid, 0), "status never removes an orphan")

	for _, c := range []struct {
		id   string
		code int
	}{{"kept", 2}, {"ghost", 4}} {
		cmd := sporectl(store, "delete", "--orphan", c.id)
		b, _ := cmd.CombinedOutput()
		require.Equal(t, c.code, cmd.ProcessState.ExitCode(), "%s", b)
	}
	runOK(t, store, "delete", "--orphan", "lost")
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 20*time.Millisecond)
	runOK(t, store, "status")
}
