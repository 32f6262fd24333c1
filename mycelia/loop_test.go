package mycelia

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestSwarmLoopBoundsAndStop(t *testing.T) {
	h := newHarness(t).colony()
	for _, body := range []any{
		map[string]any{"every": "30s"},
		map[string]any{"every": "25h"},
		map[string]any{"every": "soon"},
		map[string]any{},
		map[string]any{"every": "10m", "stop": true},
	} {
		r := h.do("lab-lead", http.MethodPost, "/api/swarm/loop", body)
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", body, r.body)
		require.Zero(t, h.spore("lab-lead").Loop)
	}
	r := h.do("lab-lead", http.MethodPost, "/api/swarm/loop", map[string]any{"every": "1h"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NotZero(t, h.spore("lab-lead").Loop)

	r = h.do("lab-lead", http.MethodPost, "/api/swarm/loop", map[string]any{"stop": true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var res LoopResponse
	r.decode(t, &res)
	require.Empty(t, res.Every)
	sp := h.spore("lab-lead")
	require.Zero(t, sp.Loop)
	require.True(t, sp.LoopDue.IsZero())
	var loops []state.Event
	for _, ev := range h.events("lab-lead") {
		if ev.Action == "loop" {
			loops = append(loops, ev)
		}
	}
	require.Len(t, loops, 2)
	require.Contains(t, loops[1].Text, "stopped")
}
