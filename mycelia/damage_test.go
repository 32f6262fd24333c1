package mycelia

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// One spore's damaged log: serve's spores list answers for every other
// spore (it answered 500 for all), and names the damaged one's state.
func TestSporesListGoesOnPastOneSporesDamage(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = -1
	h.rt.BridgeOf("lab-c").Write(`{"type":"assistant","n":1}`)
	require.Equal(t, http.StatusOK, h.do("arch", "GET", "/api/spores", nil).status)
	require.Equal(t, uint64(1), h.spore("lab-c").BridgeSeq)
	// The last line of lab-c's log no longer matches its checksum (a
	// flipped bit), and its bridge has a line the store has not taken in:
	// the pass reads the end of its log, and the list its last event.
	logs, err := filepath.Glob(filepath.Join(h.st.Store.Info().Location, "events", "lab-c.*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	last := len(lines) - 1
	require.Contains(t, lines[last], `"kind"`)
	lines[last] = strings.Replace(lines[last], `"kind"`, `"KIND"`, 1)
	require.NoError(t, os.WriteFile(logs[0], []byte(strings.Join(lines, "")+"\n"), 0o600))
	h.rt.BridgeOf("lab-c").Write(`{"type":"assistant","n":2}`)

	r := h.do("arch", "GET", "/api/spores", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var l SporeList
	r.decode(t, &l)
	seen := map[string]SporeInfo{}
	for _, s := range l.Spores {
		seen[s.ID] = s
	}
	require.Contains(t, seen, "lab-a", "the others are listed")
	require.Contains(t, seen, "far-x")
	require.Equal(t, "Error", seen["lab-c"].Effective)
	require.Contains(t, seen["lab-c"].Reason, "store damage: events/lab-c.")

	// A tell to another spore still goes.
	r = h.do("lab-myco", "POST", "/spores/lab-a/prompt", map[string]any{"text": "carry on"})
	require.Less(t, r.status, 300, "%s", r.body)

	// Repaired, the store is whole again (the harness checks it at the end).
	rep, err := h.st.Store.(state.Repairer).Repair(context.Background(), "lab-c", false)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Replaced)
}
