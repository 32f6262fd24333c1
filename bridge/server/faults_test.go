package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/eventlog"
)

const initLine = `echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'`
const resultLine = `echo '{"type":"result","subtype":"success","is_error":false,"result":"ok"}'`

func TestBadAgentLinesKeptSafely(t *testing.T) {
	bin := script(t, `cat >/dev/null
`+initLine+`
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"fine"}]}}'
echo '{"type":"assist'
printf 'not json at all\n'
printf 'bad \377\376 bytes\n'
printf '{"type":"user","text":"\377"}\n'
head -c 2100000 /dev/zero | tr '\0' 'a'; echo
printf '\n'
echo '{"type":"brand_new_type","x":1}'
`+resultLine+`
printf 'last line without newline'
`)
	h := startBridge(t, t.TempDir(), &agent.Claude{Bin: bin}, nil)
	h.prompt("p", "go")
	evs := h.until(0, 20*time.Second, func(evs []bridge.Event) bool {
		return len(evs) > 0 && string(evs[len(evs)-1].Line) == `"last line without newline"`
	})
	requireContiguous(t, evs, 1)

	var got []string
	for _, e := range evs {
		require.True(t, json.Valid(e.Line), "line %d is JSON", e.Seq)
		if lineField(e, "type") == "bridge" && lineField(e, "subtype") != "line_truncated" {
			continue
		}
		got = append(got, string(e.Line))
	}
	require.Len(t, got, 11)
	require.Equal(t, `{"type":"assistant","message":{"content":[{"type":"text","text":"fine"}]}}`, got[1])
	require.Equal(t, `"{\"type\":\"assist"`, got[2], "malformed JSON becomes a string")
	require.Equal(t, `"not json at all"`, got[3])
	require.Equal(t, `"bad \\xff\\xfe bytes"`, got[4], "invalid UTF-8 is escaped")
	require.Equal(t, `"{\"type\":\"user\",\"text\":\"\\xff\"}"`, got[5])
	var marker struct {
		Subtype       string
		OriginalBytes int `json:"original_bytes"`
		Head          string
	}
	require.NoError(t, json.Unmarshal([]byte(got[6]), &marker))
	require.Equal(t, "line_truncated", marker.Subtype)
	require.Equal(t, 2100000, marker.OriginalBytes)
	require.Equal(t, strings.Repeat("a", eventlog.TruncatedHead), marker.Head)
	require.Equal(t, `""`, got[7], "an empty line is still a line")
	require.Equal(t, `{"type":"brand_new_type","x":1}`, got[8], "unknown types are kept verbatim")

	st := h.waitStatus(5*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle })
	require.Zero(t, st.AgentRestarts, "a turn that reached its result did not crash")
	require.True(t, st.Healthy)
}

func TestAgentThatKeepsDyingBacksOffAndQueueGoesOn(t *testing.T) {
	// The agent dies on every prompt that says "crash", answers the rest.
	bin := script(t, `p=$(cat)
`+initLine+`
case "$p" in *crash*) echo '{"type":"assistant","message":{"content":[]}}'; exit 3;; esac
`+resultLine+`
`)
	h := startBridge(t, t.TempDir(), &agent.Claude{Bin: bin}, func(c *Config) {
		c.BackoffBase, c.BackoffMax, c.MaxAttempts = 300*time.Millisecond, time.Second, 3
	})
	h.prompt("bad", "please crash")
	h.prompt("good", "be fine")

	st := h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateBackoff })
	require.NotNil(t, st.BackoffUntil)
	require.GreaterOrEqual(t, st.AgentRestarts, 1)

	evs := h.until(0, 30*time.Second, hasType("result", "", 1))
	requireContiguous(t, evs, 1)
	require.Equal(t, 3, countType(evs, "bridge", "agent_exited"), "three attempts")
	require.Equal(t, 1, countType(evs, "bridge", "prompt_abandoned"))
	var waits []float64
	var retried []string
	for _, e := range evs {
		var m map[string]any
		require.NoError(t, json.Unmarshal(e.Line, &m))
		switch m["subtype"] {
		case "agent_exited":
			waits = append(waits, m["restart_in_ms"].(float64))
			require.Contains(t, m["exit"], "exit status 3")
		case "turn_started":
			retried = append(retried, m["prompt_id"].(string))
		}
	}
	require.Equal(t, []float64{300, 600, 1000}, waits, "the wait doubles up to the cap")
	require.Equal(t, []string{"bad", "bad", "bad", "good"}, retried, "the dead prompt is retried, then the queue goes on")
	st = h.waitStatus(5*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle })
	require.Equal(t, 3, st.AgentRestarts)
}

func TestInterruptStopsTheTurn(t *testing.T) {
	bin := script(t, `p=$(cat)
`+initLine+`
case "$p" in *slow*) sleep 30;; esac
`+resultLine+`
`)
	h := startBridge(t, t.TempDir(), &agent.Claude{Bin: bin, KillAfter: 200 * time.Millisecond}, nil)
	h.prompt("slow", "slow one")
	st := h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateWorking })
	require.Positive(t, st.AgentPID)
	require.Equal(t, "slow", st.Prompt)
	h.prompt("next", "quick one")
	st, err := h.client.Status(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, st.Queue)

	start := time.Now()
	require.NoError(t, h.client.Interrupt(context.Background()))
	evs := h.until(0, 10*time.Second, hasType("result", "", 1))
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, 1, countType(evs, "bridge", "interrupted"))
	require.Zero(t, countType(evs, "bridge", "agent_exited"), "an interrupt is not a crash")
	st = h.waitStatus(5*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle })
	require.Zero(t, st.AgentPID)
	require.Zero(t, st.AgentRestarts)
	ps, err := h.client.PromptState(context.Background(), "slow")
	require.NoError(t, err)
	require.Equal(t, "done", ps.State)
}

func TestQueueSurvivesBridgeRestart(t *testing.T) {
	home := t.TempDir()
	bin := script(t, `cat >/dev/null
`+initLine+`
sleep 30
`)
	h := startBridge(t, home, &agent.Claude{Bin: bin, KillAfter: 100 * time.Millisecond}, nil)
	h.prompt("a", "first")
	h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateWorking })
	h.prompt("b", "second")
	h.prompt("c", "third")
	h.stop()

	h2 := startBridge(t, home, agent.Echo{}, nil)
	evs := h2.until(0, 10*time.Second, hasType("result", "", 3))
	requireContiguous(t, evs, 1)
	var order []string
	for _, e := range evs {
		if lineField(e, "type") == "result" {
			order = append(order, lineField(e, "result"))
		}
	}
	require.Len(t, order, 3)
	require.Contains(t, order[0], "stopped before finishing", "the prompt in flight runs again, and says so")
	require.Contains(t, order[0], "first")
	require.Equal(t, []string{"echo: second", "echo: third"}, order[1:])
	require.True(t, h2.prompt("b", "second").Duplicate, "ids are remembered across restarts")
}

func TestDiskFullReportsUnhealthyAndLosesNothing(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	ctx := context.Background()
	h.prompt("before", "one")
	before := h.until(0, 10*time.Second, hasType("result", "", 1))

	var full atomic.Bool
	full.Store(true)
	restore := eventlog.InjectFault(func(op string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	})
	defer restore()

	h.prompt("during", "two")
	require.Eventually(t, func() bool { return h.client.Health(ctx) != nil }, 10*time.Second, 20*time.Millisecond)
	err := h.client.Health(ctx)
	require.ErrorContains(t, err, "no space left on device")
	st, err := h.client.Status(ctx)
	require.NoError(t, err)
	require.False(t, st.Healthy)
	require.Contains(t, st.Error, "no space left")
	require.Equal(t, before[len(before)-1].Seq, st.LastSeq, "nothing new is numbered while the disk is full")
	page, err := h.client.Events(ctx, 0, 1000, 0)
	require.NoError(t, err)
	require.Equal(t, before, page.Events, "what was numbered is still served, unchanged")

	full.Store(false)
	require.Eventually(t, func() bool { return h.client.Health(ctx) == nil }, 10*time.Second, 20*time.Millisecond)
	all := h.until(0, 10*time.Second, hasType("result", "", 2))
	requireContiguous(t, all, 1)
	require.Equal(t, before, all[:len(before)])
	require.Equal(t, "echo: two", lineField(all[len(all)-1], "result"), "the lines held back are numbered once the disk has room")
}
