package main

import (
	"bufio"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state/statetest"
	"github.com/stretchr/testify/require"
)

// lineWatcher collects a process's output lines as they come.
type lineWatcher struct {
	mu    sync.Mutex
	lines []string
}

func watch(r io.Reader) *lineWatcher {
	w := &lineWatcher{}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *lineWatcher) count(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// TestChatFollowSurvivesABridgeRestart: `chat --follow` prints lines as
// they arrive, carries on while the bridge is dead and restarted, and
// prints every line once.
func TestChatFollowSurvivesABridgeRestart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo", "--backoff-initial", "1s")
	runOK(t, store, "create", "talker", "--wake")
	t.Cleanup(func() { _ = sporectl(store, "stop", "talker").Run() })
	runOK(t, store, "wake", "talker", "--wait", "15s")

	follow := sporectl(store, "chat", "talker", "--follow")
	out, err := follow.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, follow.Start())
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	w := watch(out)

	runOK(t, store, "prompt", "talker", "first question")
	require.Eventually(t, func() bool { return w.count("echo: first question") == 1 }, 15*time.Second, 50*time.Millisecond)

	require.NoError(t, syscall.Kill(bridgePID(t, store, "talker"), syscall.SIGKILL))
	time.Sleep(300 * time.Millisecond) // follow now finds the bridge gone
	runOK(t, store, "wake", "talker", "--wait", "15s")
	runOK(t, store, "prompt", "talker", "second question")
	require.Eventually(t, func() bool { return w.count("echo: second question") == 1 }, 20*time.Second, 50*time.Millisecond)

	require.NoError(t, follow.Process.Signal(syscall.SIGINT))
	_ = follow.Wait()
	require.Equal(t, 0, follow.ProcessState.ExitCode(), "Ctrl-C ends a follow quietly, as kubectl logs -f does")
	require.Equal(t, 1, w.count("echo: first question"), "a line printed twice")
	require.Equal(t, 2, w.count("> [user:"), "each prompt once")
}
