package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// TestMarkSeenThroughExec: a marked process that execs again and again
// (as a script that execs the real bridge does once) is marked at every
// look, never caught bare in the middle of an exec, where the kernel
// shows no environment at all.
func TestMarkSeenThroughExec(t *testing.T) {
	const id, hops = "execing", 300
	home := t.TempDir()
	hop := filepath.Join(t.TempDir(), "hop")
	require.NoError(t, os.WriteFile(hop, []byte(`#!/bin/sh
if [ "$1" -gt 0 ]; then exec "$0" $(($1 - 1)); fi
exec sleep 30
`), 0o755))
	cmd := exec.Command(hop, strconv.Itoa(hops))
	cmd.Env = []string{"HOME=" + home, sporeenv.SporeID + "=" + id, "PATH=" + os.Getenv("PATH")}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	looks, bare := 0, 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		require.NoError(t, err)
		if strings.HasPrefix(string(cmdline), "sleep\x00") {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d hops not done in a minute", hops)
		looks++
		if !hasMark(pid, id, home) {
			bare++
		}
	}
	require.Zero(t, bare, "of %d looks while it execed %d times", looks, hops)
	require.True(t, hasMark(pid, id, home))
	require.False(t, hasMark(pid, id, t.TempDir()), "another home is not its mark")
}

// TestEmptyEnvironmentIsNoMark: a process started with no environment at
// all is read as such (after environ's short wait), not as marked.
func TestEmptyEnvironmentIsNoMark(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "30")
	cmd.Env = []string{}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline"))
		return err == nil && strings.HasPrefix(string(b), "/bin/sleep\x00")
	}, 5*time.Second, time.Millisecond)
	b, err := environ(cmd.Process.Pid)
	require.NoError(t, err)
	require.Empty(t, b)
	require.False(t, hasMark(cmd.Process.Pid, "x", "/"))
}
