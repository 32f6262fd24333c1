package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// TestCountedSpend: the gateway's count of today (UTC) is the spend, what
// the bridge reports is not; a colony's is its spores' and no other's.
func TestCountedSpend(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	spore := func(id, colony string, calls ...time.Time) state.Spore {
		sp := state.Spore{Wish: state.Wish{ID: id, Colony: colony}}
		// The bridge says nothing was spent; the gateway counted.
		for i, at := range calls {
			sp.GatewayRecord, _ = sp.GatewayRecord.Count(id+string(rune('a'+i)), state.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CostMicros: 7}, at)
		}
		return sp
	}
	w1 := spore("w1", "lab", now.Add(-time.Hour), now, now.Add(-11*time.Hour)) // the last one is yesterday
	w2 := spore("w2", "lab", now)
	x := spore("x", "other", now)
	require.Equal(t, state.Spend{Tokens: 30, CostMicros: 14}, policy.CountedSpend(w1, now))
	require.Equal(t, map[string]state.Spend{"lab": {Tokens: 45, CostMicros: 21}, "other": {Tokens: 15, CostMicros: 7}},
		policy.ColonySpends([]state.Spore{w1, w2, x}, state.Settings{}, now))
	require.Equal(t, state.Spend{}, policy.CountedSpend(state.Spore{}, now))
}
