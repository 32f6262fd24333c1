package local

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// TestForgedRunFileNeverSignals: a run file that names a live session
// leader exactly (pid, start time, boot id) but not one of the spore's
// processes (no mark) is not believed: it is not observed running, and
// Stop signals neither it nor its session.
func TestForgedRunFileNeverSignals(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	innocent := exec.Command("sleep", "30")
	innocent.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, innocent.Start())
	t.Cleanup(func() { _ = innocent.Process.Kill(); _ = innocent.Wait() })
	st, err := readProcStat(innocent.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(r.cfg.Root, "run"), 0o700))
	require.NoError(t, writeRunFile(r.runPath("forged", ".json"),
		&runFile{PID: innocent.Process.Pid, StartTime: st.StartTime, BootID: bootID(), Addr: "127.0.0.1:1", Started: time.Now()}))

	po, ok := observe(t, r, "forged")
	require.True(t, ok)
	require.NotEqual(t, reconcile.PodRunning, po.State)
	require.NotEqual(t, reconcile.PodPending, po.State)
	_, err = r.Bridge(ctx, "forged")
	require.ErrorIs(t, err, state.ErrNotFound)
	require.NoError(t, r.Stop(ctx, "forged"))
	require.NoError(t, syscall.Kill(innocent.Process.Pid, 0), "stop signalled a process that was not the spore's")
	require.False(t, isZombie(innocent.Process.Pid), "stop ended a process that was not the spore's")
}

// TestRunFileAddressIsLoopback: a run file of a live bridge whose address
// is not the loopback address Start records is not believed: that address
// is never dialled (neither for /healthz nor with the bridge token); the
// bridge is found by its mark instead, at its own address.
func TestRunFileAddressIsLoopback(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "moved", true) })
	require.NoError(t, r.Start(ctx, spore("moved"), reconcile.Launch{Creds: creds}))
	waitReady(t, r, "moved")

	// A listener elsewhere on loopback that counts who dials it.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled <- struct{}{}
			c.Close()
		}
	}()
	rf, err := readRunFile(r.runPath("moved", ".json"))
	require.NoError(t, err)
	own := rf.Addr
	for _, addr := range []string{ln.Addr().String(), "localhost:" + portOf(t, ln.Addr().String()), "example.invalid:80", "127.0.0.1"} {
		rf.Addr = addr
		require.NoError(t, writeRunFile(r.runPath("moved", ".json"), rf))
		po, ok := observe(t, r, "moved")
		require.True(t, ok, addr)
		require.Equal(t, reconcile.PodRunning, po.State, addr)
		require.True(t, po.Ready, addr)
		ep, err := r.Bridge(ctx, "moved")
		require.NoError(t, err, addr)
		require.Equal(t, "http://"+own, ep.BaseURL, "the bridge's own address, not the run file's %s", addr)
	}
	select {
	case <-dialled:
		t.Fatal("the runtime dialled an address a run file gave that Start would never record")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, r.Stop(ctx, "moved"))
	require.Empty(t, marked("moved"))
}

func portOf(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// TestTokenNotWrittenThroughSymlink: a symlink planted in the home where
// Start writes a token fails the start; the link's target is untouched.
func TestTokenNotWrittenThroughSymlink(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "linked", true) })
	outside := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(outside, []byte("keep me\n"), 0o644))
	for _, path := range []string{tokenPath(r.home("linked")), apiTokenPath(r.home("linked"))} {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.Symlink(outside, path))
		require.Error(t, r.Start(ctx, spore("linked"), reconcile.Launch{Creds: creds}))
		b, err := os.ReadFile(outside)
		require.NoError(t, err)
		require.Equal(t, "keep me\n", string(b))
		require.Empty(t, marked("linked"), "nothing was started")
		require.NoError(t, os.Remove(path))
	}
}
