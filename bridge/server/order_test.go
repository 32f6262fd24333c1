package server

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

// TestPromptDoneOnlyAfterItsLines: while the log holds a turn's lines
// back, the turn may end but its prompt is not recorded done in the
// queue journal (a bridge killed then runs it again instead of losing
// its lines); once the lines are in, it is.
func TestPromptDoneOnlyAfterItsLines(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	h.waitStatus(10*time.Second, func(st bridge.Status) bool { return st.State == bridge.StateIdle })
	journal := func() string {
		b, err := os.ReadFile(filepath.Join(h.srv.dir, "queue.jsonl"))
		require.NoError(t, err)
		return string(b)
	}
	gate := make(chan struct{})
	h.srv.appendGate.Store(&gate)
	release := sync.OnceFunc(func() { h.srv.appendGate.Store(nil); close(gate) })
	t.Cleanup(release) // before the bridge stops: its log drains on Close
	h.prompt("p1", "hello")

	// The turn ran (started in the journal, the agent is done: idle) while
	// every line of it waits for the log.
	h.waitStatus(10*time.Second, func(st bridge.Status) bool {
		return st.State == bridge.StateIdle && strings.Contains(journal(), `"op":"start","id":"p1"`)
	})
	time.Sleep(300 * time.Millisecond) // room for a wrong order to show
	require.NotContains(t, journal(), `"op":"done","id":"p1"`, "done before its lines are in the log")
	require.Equal(t, 1, h.srv.queue.len())

	release()
	evs := h.until(0, 10*time.Second, func(evs []bridge.Event) bool {
		for _, e := range evs {
			if lineField(e, "type") == "result" {
				return true
			}
		}
		return false
	})
	var started bool
	for _, e := range evs {
		started = started || (lineField(e, "subtype") == "turn_started" && lineField(e, "prompt_id") == "p1")
	}
	require.True(t, started, "the turn's lines are in the log")
	require.Eventually(t, func() bool { return strings.Contains(journal(), `"op":"done","id":"p1"`) }, 10*time.Second, 10*time.Millisecond)
}
