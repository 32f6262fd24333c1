package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/statetest"
)

// TestStatusAndEventsWatch: `status -w` prints the table once, then a row
// again only when that spore changes (woken: Healthy; deleted: DELETED),
// never the rows that did not; `events -w -o json` prints each new event
// once, as one JSON line, including the echo agent's answer to a prompt;
// Ctrl-C ends both with exit 0.
func TestStatusAndEventsWatch(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo")
	runOK(t, store, "create", "quiet")
	runOK(t, store, "create", "talker")
	runOK(t, store, "create", "doomed")
	t.Cleanup(func() { _ = sporectl(store, "stop", "talker").Run() })

	status := sporectl(store, "status", "-w", "--watch-interval", "200ms")
	sout, err := status.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, status.Start())
	t.Cleanup(func() { _ = status.Process.Kill(); _ = status.Wait() })
	sw := watch(sout)
	require.Eventually(t, func() bool { return sw.count("quiet ") == 1 && sw.count("doomed ") == 1 && sw.count("talker ") == 1 },
		10*time.Second, 20*time.Millisecond, "the first table")
	require.Equal(t, 1, sw.count("EFFECTIVE"), "one header")

	events := sporectl(store, "events", "talker", "-w", "-o", "json", "--watch-interval", "200ms")
	eout, err := events.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, events.Start())
	t.Cleanup(func() { _ = events.Process.Kill(); _ = events.Wait() })
	ew := watch(eout)
	require.Eventually(t, func() bool { return ew.count(`"action":"created"`) == 1 }, 10*time.Second, 20*time.Millisecond, "the log so far")

	runOK(t, store, "wake", "talker", "--wait", "15s")
	healthy := regexp.MustCompile(`^talker\s+default\s+spore\s+Running\s+\S+\s+Healthy\s`)
	require.Eventually(t, func() bool { return sw.countMatch(healthy) >= 1 }, 15*time.Second, 50*time.Millisecond, "talker's row again, Healthy")

	runOK(t, store, "prompt", "talker", "are you there")
	require.Eventually(t, func() bool { return ew.count(`"text":"echo: are you there"`) == 1 }, 15*time.Second, 50*time.Millisecond, "the answer, ingested and printed")

	runOK(t, store, "delete", "doomed")
	require.Eventually(t, func() bool { return sw.count("DELETED") == 1 }, 10*time.Second, 20*time.Millisecond, "the deleted spore once more")

	// A few more intervals: nothing that did not change is printed again.
	time.Sleep(time.Second)
	require.Equal(t, 1, sw.count("quiet "), "an unchanged row printed again")
	require.Equal(t, 1, sw.count("EFFECTIVE"), "the header printed again")
	require.Equal(t, 1, ew.count(`"action":"created"`), "an event printed twice")
	require.Equal(t, 1, ew.count(`"text":"echo: are you there"`), "an event printed twice")
	ew.each(func(l string) {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &v), "each line is one JSON document: %q", l)
		require.NotZero(t, v["seq"], "an event: %q", l)
	})

	for _, c := range []*struct {
		name string
		sig  func() error
		wait func() error
		code func() int
	}{
		{"status -w", func() error { return status.Process.Signal(syscall.SIGINT) }, status.Wait, func() int { return status.ProcessState.ExitCode() }},
		{"events -w", func() error { return events.Process.Signal(syscall.SIGINT) }, events.Wait, func() int { return events.ProcessState.ExitCode() }},
	} {
		require.NoError(t, c.sig())
		_ = c.wait()
		require.Equal(t, 0, c.code(), "%s: Ctrl-C ends a watch quietly", c.name)
	}
}

func (w *lineWatcher) countMatch(re *regexp.Regexp) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

func (w *lineWatcher) each(fn func(string)) {
	w.mu.Lock()
	lines := append([]string(nil), w.lines...)
	w.mu.Unlock()
	for _, l := range lines {
		fn(l)
	}
}
