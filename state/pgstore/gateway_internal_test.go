package pgstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestGatewayColumns: the compact forms of model_usage and model_calls
// read back exactly what was written, a call id's quote and backslash
// included, and anything else is an error rather than a guess.
func TestGatewayColumns(t *testing.T) {
	h := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	hs := []state.HourUsage{
		{Hour: h, Calls: 3, Usage: state.Usage{InputTokens: 1200, OutputTokens: 340, CacheCreationTokens: 5, CacheReadTokens: 90_000, CostMicros: 15_500}},
		{Hour: h.Add(time.Hour), Calls: 9223372036854775807},
	}
	enc := encodeModelUsage(hs)
	require.Equal(t, "[[1796634000,3,1200,340,5,90000,15500],[1796637600,9223372036854775807,0,0,0,0,0]]", enc)
	got, err := decodeModelUsage([]byte(enc.(string)))
	require.NoError(t, err)
	require.Equal(t, hs, got)

	cs := []state.CountedCall{
		{ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Hour: h, Usage: state.Usage{InputTokens: 10, OutputTokens: 2, CostMicros: 7}},
		{ID: `odd"one\`, Hour: h.Add(time.Hour)},
	}
	encCalls := encodeModelCalls(cs)
	require.Equal(t, `[["msg_01XFDUDYJgAACzvnptvVoYEL",1796634000,10,2,0,0,7],["odd\"one\\",1796637600,0,0,0,0,0]]`, encCalls)
	gotCalls, err := decodeModelCalls([]byte(encCalls.(string)))
	require.NoError(t, err)
	require.Equal(t, cs, gotCalls)
	require.Nil(t, encodeModelUsage(nil))
	require.Nil(t, encodeModelCalls(nil))

	// What PostgreSQL's jsonb would print, spaces and all, still reads.
	gotCalls, err = decodeModelCalls([]byte(` [ ["a", 1796634000, 1, 2, 3, 4, 5] ]` + "\n"))
	require.NoError(t, err)
	require.Equal(t, []state.CountedCall{{ID: "a", Hour: h, Usage: state.Usage{InputTokens: 1, OutputTokens: 2, CacheCreationTokens: 3, CacheReadTokens: 4, CostMicros: 5}}}, gotCalls)
	got, err = decodeModelUsage([]byte("[[1796634000,0,0,0,0,0,-1]]"))
	require.NoError(t, err)
	require.Equal(t, int64(-1), got[0].CostMicros, "negative numbers parse; Validate refuses them")

	for _, bad := range []string{"", "[", "]", "[[]]", "null", "[[1,2,3,4,5,6]]", "[[1,2,3,4,5,6,7,8]]", "[[1,2,3,4,5,6,7]", "[[1,2,3,4,5,6,7]]x",
		"[[1,2,3,4,5,6,7],]", `[{"hour":1}]`, "[[1.5,2,3,4,5,6,7]]", "[[9223372036854775808,2,3,4,5,6,7]]", `[["a",1,2,3,4,5,6]]`} {
		_, err := decodeModelUsage([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
	for _, bad := range []string{"", "[[]]", "null", `[["a",1,2,3,4,5]]`, `[["a",1,2,3,4,5,6,7]]`, `[[1,1,2,3,4,5,6]]`, `[["a,1,2,3,4,5,6]]`,
		`[["a\n",1,2,3,4,5,6]]`, `[["a\u0041",1,2,3,4,5,6]]`, "[[\"a\x01\",1,2,3,4,5,6]]", "[[\"\xc3\xa9\",1,2,3,4,5,6]]",
		`[["` + strings.Repeat("x", state.MaxCallID+1) + `",1,2,3,4,5,6]]`, `[["a",1,2,3,4,5,6],]`} {
		_, err := decodeModelCalls([]byte(bad))
		require.Error(t, err, "%q", bad)
	}

	// A damaged value cannot make a read hold more than the record's
	// bounds.
	long := "[" + strings.Repeat("[1796634000,0,0,0,0,0,0],", state.MaxActivity) + "[1796634000,0,0,0,0,0,0]]"
	_, err = decodeModelUsage([]byte(long))
	require.ErrorContains(t, err, "more than 168 hours")
	many := "[" + strings.Repeat(`["a",1,0,0,0,0,0],`, state.MaxCountedCalls) + `["a",1,0,0,0,0,0]]`
	_, err = decodeModelCalls([]byte(many))
	require.ErrorContains(t, err, "more than 64 calls")
}

// BenchmarkGatewayColumns decodes a full record: a week of hours and the
// latest calls, what a pass reads of a busy spore.
func BenchmarkGatewayColumns(b *testing.B) {
	h := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	u := state.Usage{InputTokens: 120_000, OutputTokens: 9_000, CacheCreationTokens: 4_000, CacheReadTokens: 800_000, CostMicros: 410_000}
	hs := make([]state.HourUsage, state.MaxActivity)
	for i := range hs {
		hs[i] = state.HourUsage{Hour: h.Add(time.Duration(i) * time.Hour), Calls: 40, Usage: u}
	}
	cs := make([]state.CountedCall, state.MaxCountedCalls)
	for i := range cs {
		cs[i] = state.CountedCall{ID: "msg_01XFDUDYJgAACzvnptvVo" + strings.Repeat("x", i%4), Hour: h, Usage: u}
	}
	usage, calls := []byte(encodeModelUsage(hs).(string)), []byte(encodeModelCalls(cs).(string))
	for b.Loop() {
		var r state.GatewayRecord
		if err := scanGateway(&r, usage, calls); err != nil {
			b.Fatal(err)
		}
	}
}
