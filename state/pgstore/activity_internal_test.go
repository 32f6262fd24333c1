package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestActivityColumn: the compact form reads back exactly what was
// written, and anything else is an error rather than a guess.
func TestActivityColumn(t *testing.T) {
	h := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	hs := []state.HourActivity{
		{Hour: h, Turns: 2, ToolCalls: 7, InputTokens: 1200, OutputTokens: 340, CostMicros: 15_500},
		{Hour: h.Add(time.Hour), Turns: 9223372036854775807},
		{Hour: h.Add(2 * time.Hour), Turns: 1, StoredBytes: 4096},
	}
	enc := encodeActivity(hs)
	require.Equal(t, "[[1796029200,2,7,1200,340,15500],[1796032800,9223372036854775807,0,0,0,0],[1796036400,1,0,0,0,0,4096]]", enc)
	got, err := decodeActivity([]byte(enc.(string)))
	require.NoError(t, err)
	require.Equal(t, hs, got)
	require.Nil(t, encodeActivity(nil))

	got, err = decodeActivity([]byte(" [ [1796029200 , 1,2,3,4,5] ]\n"))
	require.NoError(t, err)
	require.Equal(t, []state.HourActivity{{Hour: h, Turns: 1, ToolCalls: 2, InputTokens: 3, OutputTokens: 4, CostMicros: 5}}, got)
	got, err = decodeActivity([]byte("[[-9223372036854775808,0,0,0,0,-1]]"))
	require.NoError(t, err)
	require.Equal(t, int64(-1), got[0].CostMicros, "negative numbers parse; Validate refuses them")
	got, err = decodeActivity([]byte("[]"))
	require.NoError(t, err)
	require.Empty(t, got)

	for _, bad := range []string{"", "[", "]", "[[]]", "[[1,2,3,4,5]]", "[[1,2,3,4,5,6,7,8]]", "[[1,2,3,4,5,6,]]", "[[1,2,3,4,5,6]", "[[1,2,3,4,5,6]]x",
		`[{"hour":"2026-11-30T09:00:00Z"}]`, "[[1.5,2,3,4,5,6]]", "[[99999999999999999999,2,3,4,5,6]]", "[[9223372036854775808,2,3,4,5,6]]", "[[-,2,3,4,5,6]]", "[[1,2,3,4,5,6],]", "null"} {
		_, err := decodeActivity([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func BenchmarkActivityColumn(b *testing.B) {
	hs := make([]state.HourActivity, state.MaxActivity)
	h := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i := range hs {
		hs[i] = state.HourActivity{Hour: h.Add(time.Duration(i) * time.Hour), Turns: 3, ToolCalls: 40, InputTokens: 120_000, OutputTokens: 9_000, CostMicros: 410_000}
	}
	enc := []byte(encodeActivity(hs).(string))
	for b.Loop() {
		if _, err := decodeActivity(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkActivityColumnJSON is the baseline: the same hours as the
// objects the directory store keeps, through encoding/json.
func BenchmarkActivityColumnJSON(b *testing.B) {
	hs := make([]state.HourActivity, state.MaxActivity)
	h := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i := range hs {
		hs[i] = state.HourActivity{Hour: h.Add(time.Duration(i) * time.Hour), Turns: 3, ToolCalls: 40, InputTokens: 120_000, OutputTokens: 9_000, CostMicros: 410_000}
	}
	enc, err := json.Marshal(hs)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var got []state.HourActivity
		if err := json.Unmarshal(enc, &got); err != nil {
			b.Fatal(err)
		}
	}
}
