package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// These tests run the real binary, as operators and cron do.

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sporectl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "sporectl")
	// Built as `make build` and the image build it: without cgo, a static
	// binary that starts without the dynamic loader and libc
	// (docs/performance.md, "Process start, again").
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sporectl: %v\n%s", err, out)
		os.Exit(1)
	}
	// One PostgreSQL server for the tests that use a postgres:// store.
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

func sporectl(store string, args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "SPORECTL_STORE="+store)
	return cmd
}

func runOK(t *testing.T, store string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := sporectl(store, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "sporectl %v: %s", args, stderr.String())
	return out
}

// TestConcurrentCommands runs many sporectl processes writing at once:
// each succeeds (waiting its turn for the store's lock) and nothing is lost.
func TestConcurrentCommands(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := sporectl(store, "create", fmt.Sprintf("s-%02d", i), "--colony", "lab").CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("create s-%02d: %v: %s", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var list struct {
		Spores []struct{ ID string } `json:"spores"`
	}
	require.NoError(t, json.Unmarshal(runOK(t, store, "list", "-o", "json"), &list))
	require.Len(t, list.Spores, n)
	runOK(t, store, "check")
}

// TestKilledCommands SIGKILLs `create` processes at random moments; every
// create that exited 0 is in the store and check stays clean.
func TestKilledCommands(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init")
	acked := map[string]bool{}
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("k-%02d", i)
		cmd := sporectl(store, "create", id)
		require.NoError(t, cmd.Start())
		delay := time.Duration(i%10) * time.Millisecond
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				acked[id] = true
			}
		case <-time.After(delay):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			if err := <-done; err == nil {
				acked[id] = true
			}
		}
		runOK(t, store, "check")
	}
	var list struct {
		Spores []struct{ ID string } `json:"spores"`
	}
	require.NoError(t, json.Unmarshal(runOK(t, store, "list", "-o", "json"), &list))
	have := map[string]bool{}
	for _, s := range list.Spores {
		have[s.ID] = true
	}
	for id := range acked {
		require.True(t, have[id], "create %s exited 0 but the spore is missing", id)
	}
	t.Logf("%d of 30 creates completed before SIGKILL", len(acked))
}
