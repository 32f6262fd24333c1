package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestGatewayCountIsIdempotentPerCall(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 59, 0, 0, time.UTC)
	var r state.GatewayRecord
	var added state.Usage
	// message_start: input known, one output token so far.
	r, added = r.Count("msg_1", state.Usage{InputTokens: 100, OutputTokens: 1, CostMicros: 300}, t0)
	require.Equal(t, state.Usage{InputTokens: 100, OutputTokens: 1, CostMicros: 300}, added)
	// message_delta, an hour later: the call stays in its first hour.
	r, added = r.Count("msg_1", state.Usage{InputTokens: 100, OutputTokens: 50, CostMicros: 1050}, t0.Add(time.Hour))
	require.Equal(t, state.Usage{OutputTokens: 49, CostMicros: 750}, added)
	// The same report again (another replica, a retry): nothing.
	r, added = r.Count("msg_1", state.Usage{InputTokens: 100, OutputTokens: 50, CostMicros: 1050}, t0.Add(time.Hour))
	require.True(t, added.IsZero())
	require.Len(t, r.ModelUsage, 1)
	require.Equal(t, int64(1), r.ModelUsage[0].Calls)
	require.Equal(t, state.Spend{Tokens: 150, CostMicros: 1050}, r.CountedOn(t0).Spend())
	// Counting keeps what else the record holds.
	r.GrantUntil = t0.Add(time.Hour)
	r, _ = r.Count("msg_1", state.Usage{InputTokens: 100, OutputTokens: 50, CostMicros: 1050}, t0)
	require.Equal(t, t0.Add(time.Hour), r.GrantUntil)
	// Another call, the next day: today's is its alone.
	next := t0.Add(24 * time.Hour)
	r, _ = r.Count("msg_2", state.Usage{InputTokens: 7, CacheCreationTokens: 3, CacheReadTokens: 1000}, next)
	require.Equal(t, state.Spend{Tokens: 10}, r.CountedOn(next).Spend())
	require.Len(t, r.ModelUsage, 2)
}

func TestGatewayCountForgetsOldCallsAndKeepsItsInput(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var r state.GatewayRecord
	r, _ = r.Count("first", state.Usage{InputTokens: 1}, t0)
	before := r
	for i := range state.MaxCountedCalls {
		r, _ = r.Count(fmt.Sprintf("m%d", i), state.Usage{InputTokens: 1}, t0)
	}
	require.Len(t, r.ModelCalls, state.MaxCountedCalls)
	require.Equal(t, "m0", r.ModelCalls[0].ID)
	// Counting did not write into the record it started from.
	require.Len(t, before.ModelCalls, 1)
	require.Equal(t, int64(1+state.MaxCountedCalls), r.CountedOn(t0).InputTokens)
}

func TestGatewaySettingsAreChecked(t *testing.T) {
	require.NoError(t, state.Settings{Runtime: "local", ModelGateway: state.GatewayOff}.Validate())
	var inv *state.InvalidError
	require.ErrorAs(t, state.Settings{Runtime: "local", ModelGateway: "maybe"}.Validate(), &inv)
	require.Equal(t, "model_gateway", inv.Field)
	require.ErrorAs(t, state.Settings{Runtime: "local", ModelCallsPerMinute: -1}.Validate(), &inv)
	require.Equal(t, "model_calls_per_minute", inv.Field)
	require.True(t, state.Settings{}.Gateway())
	require.Equal(t, state.DefaultModelCallsPerMinute, state.Settings{}.ModelCallRate())
}
