package mycelia

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestSporesListReadsNoSporeAlone: GET /api/spores over a fleet that
// changed nothing reads every last event with one LastEvents call and no
// Tail, the records once (the pass's snapshot, which reach is decided
// on), and its reads (the caller's token and record, the pass's whole
// fleet reads, the list's) are as many with 87 spores in reach as with
// 167: nothing in the pass nor in the list is read per spore. The pass
// runs over the whole fleet (it names no ids), shared by every caller;
// SporesShare < 0 here so that each list runs its own, the one counted.
func TestSporesListReadsNoSporeAlone(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = -1 // each list its own pass: the one counted
	c := &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	var counts []map[string]int
	for _, more := range []int{80, 80} {
		for range more {
			i := len(h.tokens)
			h.add(state.Spore{Wish: state.Wish{ID: fmt.Sprintf("lab-%03d", i), Colony: "lab", Rank: state.RankSpore}}, i%2 == 0)
		}
		// The first list after they are created commits their first
		// observed status, reading each one's record to write it over;
		// the second changes nothing and is the one counted.
		require.Equal(t, http.StatusOK, h.do("arch", "GET", "/api/spores", nil).status)
		c.TakeCalls()
		r := h.do("arch", "GET", "/api/spores", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l SporeList
		r.decode(t, &l)
		require.Len(t, l.Spores, len(h.tokens)-1, "every spore but the [arch]")
		for _, s := range l.Spores {
			require.False(t, s.LastEventAt.IsZero(), "%s has a first prompt", s.ID)
		}
		got := c.TakeCalls()
		require.Equal(t, 1, got["LastEvents"], "%v", got)
		require.Zero(t, got["Tail"], "%v", got)
		require.Equal(t, 1, got["Spores"], "the records are read once, by the pass: %v", got)
		t.Logf("%d spores in reach: %v", len(l.Spores), got)
		counts = append(counts, got)
	}
	require.Equal(t, counts[0], counts[1], "reads with %d and with %d in reach", 80+7, 160+7)
}
