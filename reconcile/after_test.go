package reconcile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestAfterThePass: what a plan says the store holds after its pass: the
// snapshot's bridge line plus what was ingested, the bridge's lines
// beyond that (unknown when it did not answer, none when it is behind the
// store), and the activity with the ingested lines counted, the
// snapshot's own left as it was.
func TestAfterThePass(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	hour := now.Truncate(time.Hour)
	result := []byte(`{"type":"result","total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":4}}`)
	snapshot := []state.HourActivity{{Hour: hour, Turns: 1, InputTokens: 10}}
	plan := func(seq uint64, bridge BridgeState, last uint64, in *ingested) *SporePlan {
		return &SporePlan{Spore: state.Spore{Status: state.Status{IngestRecord: state.IngestRecord{BridgeSeq: seq, Activity: snapshot}}},
			Observed: Observed{Bridge: bridge, BridgeLastSeq: last}, Ingest: in}
	}
	lines := &ingested{base: 5, events: []state.Event{
		{Kind: state.KindAgent, BridgeSeq: 6, At: now, Line: result},
		{Kind: state.KindAgent, BridgeSeq: 7, At: now, Line: []byte(`"text"`)},
	}}
	for _, c := range []struct {
		name   string
		p      *SporePlan
		stored uint64
		behind uint64
		known  bool
		turns  int64
	}{
		{"nothing ingested", plan(5, BridgeUp, 9, nil), 5, 4, true, 1},
		{"ingested two of four", plan(5, BridgeUp, 9, lines), 7, 2, true, 2},
		{"a gap: nothing taken", plan(5, BridgeUp, 9, &ingested{base: 5, problem: ReasonIngestGap}), 5, 4, true, 1},
		{"bridge behind the store", plan(5, BridgeUp, 2, nil), 5, 0, true, 1},
		{"bridge down", plan(5, BridgeDown, 0, nil), 5, 0, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.stored, c.p.StoredBridgeSeq())
			behind, known := c.p.Behind()
			require.Equal(t, c.behind, behind)
			require.Equal(t, c.known, known)
			hs := c.p.Activity(now)
			require.Len(t, hs, 1)
			require.Equal(t, c.turns, hs[0].Turns)
			require.Equal(t, int64(1), snapshot[0].Turns, "the snapshot's record is not modified")
		})
	}
	hs := plan(5, BridgeUp, 9, lines).Activity(now)
	require.Equal(t, state.HourActivity{Hour: hour, Turns: 2, InputTokens: 13, OutputTokens: 4, CostMicros: 500_000,
		StoredBytes: int64(len(result) + len(`"text"`))}, hs[0])
}
