package gateway

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestCostMicros: a call is priced by its model's prefix, the longer
// prefix first; an unknown model as the dearest known; rounded up, and
// stopping at the largest count rather than wrapping.
func TestCostMicros(t *testing.T) {
	million := state.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheCreationTokens: 1e6, CacheReadTokens: 1e6}
	for _, tc := range []struct {
		model string
		u     state.Usage
		want  int64
	}{
		{"claude-sonnet-4-5-20250929", million, (3 + 15 + 3.75 + 0.30) * 1e6},
		{"claude-opus-4-5-20251101", million, (5 + 25 + 6.25 + 0.50) * 1e6},
		{"claude-opus-4-1-20250805", million, (15 + 75 + 18.75 + 1.50) * 1e6},
		{"claude-haiku-4-5", million, (1 + 5 + 1.25 + 0.10) * 1e6},
		{"claude-3-5-haiku-latest", million, (0.80 + 4 + 1 + 0.08) * 1e6},
		{"claude-3-haiku-20240307", million, (0.25 + 1.25 + 0.30 + 0.03) * 1e6},
		{"claude-fake-1", million, (15 + 75 + 18.75 + 1.50) * 1e6},
		{"", state.Usage{}, 0},
		{"claude-3-haiku", state.Usage{CacheReadTokens: 1}, 1}, // 0.03 millionths, rounded up
		{"claude-opus-4", state.Usage{InputTokens: math.MaxInt64 / 2, OutputTokens: math.MaxInt64 / 2}, math.MaxInt64 / 100},
	} {
		require.Equal(t, tc.want, costMicros(tc.model, tc.u), "%s %+v", tc.model, tc.u)
	}
}
