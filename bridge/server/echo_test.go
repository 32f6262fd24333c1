package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

func TestEchoTurnsInOrderAndIdempotent(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	ctx := context.Background()

	first := h.prompt("p1", "hello")
	require.False(t, first.Duplicate)
	h.prompt("p2", "world")
	evs := h.until(0, 10*time.Second, hasType("result", "", 2))
	requireContiguous(t, evs, 1)

	var texts []string
	for _, e := range evs {
		if lineField(e, "type") == "result" {
			texts = append(texts, lineField(e, "result"))
		}
	}
	require.Equal(t, []string{"echo: hello", "echo: world"}, texts, "prompts run in the order they came")

	dup := h.prompt("p1", "hello again")
	require.True(t, dup.Duplicate)
	require.Equal(t, -1, dup.Position)
	// The runner says idle as the agent exits and takes the prompt off the
	// queue just after (runner.go: its lines are flushed first), so idle
	// with the last prompt still counted is a moment to wait through.
	st := h.waitStatus(5*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle && s.Queue == 0 })
	require.Equal(t, "echo", st.Agent)
	require.True(t, st.Healthy)
	require.NotEmpty(t, st.SessionID)
	require.Equal(t, evs[len(evs)-1].Seq, st.LastSeq)
	page, err := h.client.Events(ctx, st.LastSeq, 0, 300*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, page.Events, "a redelivered id runs nothing")

	ps, err := h.client.PromptState(ctx, "p2")
	require.NoError(t, err)
	require.Equal(t, "done", ps.State)

	// Every line of the echo agent says it is not Claude.
	for _, e := range evs {
		if lineField(e, "type") == "system" {
			require.Equal(t, agent.EchoModel, lineField(e, "model"))
		}
	}
}

func TestCompactQueuesSlashCompact(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	a, err := h.client.Compact(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, a.ID)
	evs := h.until(0, 10*time.Second, hasType("system", "compact_boundary", 1))
	var started map[string]any
	for _, e := range evs {
		if lineField(e, "subtype") == "turn_started" {
			require.NoError(t, json.Unmarshal(e.Line, &started))
		}
	}
	require.Equal(t, "/compact", started["text"])
	require.Equal(t, a.ID, started["prompt_id"])
}

func TestSessionIDSurvivesRestart(t *testing.T) {
	home := t.TempDir()
	h := startBridge(t, home, agent.Echo{}, nil)
	h.prompt("a", "one")
	evs := h.until(0, 10*time.Second, hasType("result", "", 1))
	st1, err := h.client.Status(context.Background())
	require.NoError(t, err)
	h.stop()

	h2 := startBridge(t, home, agent.Echo{}, nil)
	st2, err := h2.client.Status(context.Background())
	require.NoError(t, err)
	require.Equal(t, st1.SessionID, st2.SessionID)
	h2.prompt("b", "two")
	more := h2.until(evs[len(evs)-1].Seq, 10*time.Second, hasType("result", "", 1))
	requireContiguous(t, append(evs, more...), 1)
	require.Equal(t, 2, countType(append(evs, more...), "bridge", "bridge_started"))
}

func TestSecondBridgeOnSameHomeRefused(t *testing.T) {
	home := t.TempDir()
	startBridge(t, home, agent.Echo{}, nil)
	_, err := New(context.Background(), Config{Home: home, Token: testToken, Agent: agent.Echo{}})
	require.ErrorIs(t, err, ErrHomeBusy)
}
