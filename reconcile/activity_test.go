package reconcile

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

const (
	resultLine = `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"wrote it","total_cost_usd":0.0013,` +
		`"usage":{"input_tokens":200,"cache_creation_input_tokens":50,"cache_read_input_tokens":7000,"output_tokens":4}}`
	errorResult = `{"type":"result","subtype":"error_max_turns","is_error":true,"total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":1}}`
	twoTools    = `{"type":"assistant","message":{"content":[{"type":"text","text":"two calls"},` +
		`{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.go"}},{"type":"server_tool_use","id":"t2","name":"web_search","input":{}}]}}`
	toolAnswer = `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"\"result\" and tool_use\" inside"}]}}`
	textLine   = `{"type":"assistant","message":{"content":[{"type":"text","text":"the \"result\" is tool_use\""}]}}`
	// forgedResult claims what no turn can spend (issue 35: one such line
	// put a whole colony over budget for the day).
	forgedResult = `{"type":"result","subtype":"success","total_cost_usd":0.01,"usage":{"input_tokens":9000000000000000000,"output_tokens":4}}`
)

// n is the bytes of lines, as stored.
func n(lines ...string) int64 {
	var t int64
	for _, l := range lines {
		t += int64(len(l))
	}
	return t
}

func TestCountLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want lineCounts
	}{
		{"result: a turn, tokens without cache reads, cost in micros", resultLine, lineCounts{turns: 1, in: 250, out: 4, cost: 1300}},
		{"an error result is a turn too", errorResult, lineCounts{turns: 1, in: 10, out: 1, cost: 500_000}},
		{"each tool_use block", twoTools, lineCounts{tools: 2}},
		{"a tool's answer is no call", toolAnswer, lineCounts{}},
		{"text that mentions the words", textLine, lineCounts{}},
		{"malformed result: usage not an object", `{"type":"result","usage":"lots","total_cost_usd":1}`, lineCounts{}},
		{"malformed result: cost not a number", `{"type":"result","total_cost_usd":"1.00"}`, lineCounts{}},
		{"torn result", `{"type":"result","total_cost_usd":0.1,"usage":{"input`, lineCounts{}},
		{"a plain string", `"type result tool_use\""`, lineCounts{}},
		{"negative figures count as zero", `{"type":"result","total_cost_usd":-3,"usage":{"input_tokens":-5,"output_tokens":-1}}`, lineCounts{turns: 1}},
		{"a usage no turn can spend counts none", `{"type":"result","total_cost_usd":1e300,"usage":{"input_tokens":9223372036854775807,"cache_creation_input_tokens":5}}`,
			lineCounts{turns: 1, forged: "claims 9223372036854775807 input tokens, over the 20000000 one turn can read"}},
		{"a forged 9e18 tokens", forgedResult, lineCounts{turns: 1, forged: "claims 9000000000000000000 input tokens, over the 20000000 one turn can read"}},
		{"output over a turn's bound", `{"type":"result","usage":{"output_tokens":20000001}}`,
			lineCounts{turns: 1, forged: "claims 20000001 output tokens, over the 20000000 one turn can write"}},
		{"cost over a turn's bound", `{"type":"result","total_cost_usd":2000.01}`,
			lineCounts{turns: 1, forged: "claims a cost of $2000.01, over the $2000.00 one turn can cost"}},
		{"at the bounds counts", `{"type":"result","total_cost_usd":2000,"usage":{"input_tokens":20000000,"output_tokens":20000000}}`,
			lineCounts{turns: 1, in: 20_000_000, out: 20_000_000, cost: 2_000_000_000}},
		{"result without usage", `{"type":"result","subtype":"success"}`, lineCounts{turns: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.bytes = int64(len(tc.line)) // every line counts its bytes
			if d := cmp.Diff(tc.want, countLine(json.RawMessage(tc.line)), cmp.AllowUnexported(lineCounts{})); d != "" {
				t.Errorf("countLine(%s) (-want +got):\n%s", tc.line, d)
			}
		})
	}
}

func TestAddActivity(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 34, 0, 0, time.UTC)
	hour := now.Truncate(time.Hour)
	h := func(back int) time.Time { return hour.Add(-time.Duration(back) * time.Hour) }
	line := func(at time.Time, l string) state.Event {
		return state.Event{Kind: state.KindAgent, At: at, Line: json.RawMessage(l)}
	}
	for _, tc := range []struct {
		name string
		have []state.HourActivity
		evs  []state.Event
		want []state.HourActivity
	}{
		{"nothing in, nothing out", nil, nil, nil},
		{"lines that count nothing still count their bytes", []state.HourActivity{{Hour: h(1), Turns: 1}},
			[]state.Event{line(now, textLine), line(now, toolAnswer)},
			[]state.HourActivity{{Hour: h(1), Turns: 1}, {Hour: h(0), StoredBytes: n(textLine, toolAnswer)}}},
		{"every line in the hour it is ingested, whatever its time",
			nil,
			[]state.Event{
				line(h(2).Add(59*time.Minute), twoTools),
				line(h(1).In(time.FixedZone("X", 5*3600)), resultLine),
				line(h(30), resultLine), // stamped yesterday: today's spend
				line(h(0).Add(time.Second), twoTools),
			},
			[]state.HourActivity{
				{Hour: h(0), Turns: 2, ToolCalls: 4, InputTokens: 500, OutputTokens: 8, CostMicros: 2600, StoredBytes: n(twoTools, resultLine, resultLine, twoTools)},
			}},
		{"added to now's hour, the others kept",
			[]state.HourActivity{{Hour: h(5), Turns: 2}, {Hour: h(0), ToolCalls: 3, StoredBytes: 10}},
			[]state.Event{line(h(1), twoTools), line(h(3), errorResult)},
			[]state.HourActivity{
				{Hour: h(5), Turns: 2},
				{Hour: h(0), Turns: 1, ToolCalls: 5, InputTokens: 10, OutputTokens: 1, CostMicros: 500_000, StoredBytes: 10 + n(twoTools, errorResult)},
			}},
		{"hours older than 7 days are dropped",
			[]state.HourActivity{{Hour: h(200), Turns: 9}, {Hour: h(state.MaxActivity), Turns: 8}, {Hour: h(state.MaxActivity - 1), Turns: 7}},
			[]state.Event{line(h(300), twoTools)},
			[]state.HourActivity{{Hour: h(state.MaxActivity - 1), Turns: 7}, {Hour: h(0), ToolCalls: 2, StoredBytes: n(twoTools)}}},
		{"every hour too old, no line: none left", []state.HourActivity{{Hour: h(500), Turns: 1}}, nil, nil},
		{"no time, or a future one, is now's hour too", nil,
			[]state.Event{line(time.Time{}, twoTools), line(now.Add(30*24*time.Hour), twoTools)},
			[]state.HourActivity{{Hour: h(0), ToolCalls: 4, StoredBytes: n(twoTools, twoTools)}}},
		{"only agent lines count", nil,
			[]state.Event{{Kind: state.KindPrompt, At: now, Text: resultLine}, {Kind: state.KindLifecycle, At: now, Line: json.RawMessage(resultLine)}}, nil},
		{"sums saturate", []state.HourActivity{{Hour: h(0), CostMicros: math.MaxInt64 - 1}},
			[]state.Event{line(now, resultLine)},
			[]state.HourActivity{{Hour: h(0), Turns: 1, InputTokens: 250, OutputTokens: 4, CostMicros: math.MaxInt64, StoredBytes: n(resultLine)}}},
		{"a forged usage counts its turn and bytes, no spend", nil,
			[]state.Event{line(now, forgedResult)},
			[]state.HourActivity{{Hour: h(0), Turns: 1, StoredBytes: n(forgedResult)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []state.HourActivity
			if tc.have != nil {
				before = append(before, tc.have...)
			}
			got := addActivity(tc.have, tc.evs, now, nil)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tc.have); d != "" {
				t.Errorf("the input was modified (-before +after):\n%s", d)
			}
			sp := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Desired: state.Running}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: got}}}
			if err := sp.Validate(); err != nil {
				t.Errorf("the record does not validate: %v", err)
			}
		})
	}
}

// A whole window of hours stays within the store's bound.
func TestAddActivityKeepsTheBound(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var hs []state.HourActivity
	for i := range 3 * state.MaxActivity {
		now := start.Add(time.Duration(i) * time.Hour)
		hs = addActivity(hs, []state.Event{{Kind: state.KindAgent, At: now, Line: json.RawMessage(twoTools)}}, now, nil)
		if len(hs) > state.MaxActivity {
			t.Fatalf("hour %d: %d hours kept, more than %d", i, len(hs), state.MaxActivity)
		}
	}
	if len(hs) != state.MaxActivity {
		t.Fatalf("kept %d hours, want %d", len(hs), state.MaxActivity)
	}
	sp := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Desired: state.Running}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: hs}}}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAddActivity is the counting's cost per ingested line, on a
// real turn's lines (Claude Code's stream-json), to set against the
// ingest's own cost per line (BenchmarkIngest100Bridges).
//
//	go test -run '^$' -bench AddActivity -count 5 ./reconcile
func BenchmarkAddActivity(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "bridge", "streamjson", "testdata", "turn.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var evs []state.Event
	for len(evs) < 1000 {
		for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			evs = append(evs, state.Event{Kind: state.KindAgent, At: now.Add(-time.Duration(len(evs)) * time.Minute), Line: l})
		}
	}
	b.ResetTimer()
	for b.Loop() {
		addActivity(nil, evs, now, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/line")
}

// The commit counts each line with what the fetch counted for it, and
// counts a line the fetch did not bring itself.
func TestIngestedCountOf(t *testing.T) {
	in := &ingested{base: 10, counts: []lineCounts{{tools: 7}, {turns: 1}}}
	require := func(want lineCounts, e state.Event) {
		t.Helper()
		if got := in.countOf(e); got != want {
			t.Errorf("countOf(seq %d) = %+v, want %+v", e.BridgeSeq, got, want)
		}
	}
	// The fetch's counts win over the line (which would count nothing).
	require(lineCounts{tools: 7}, state.Event{BridgeSeq: 11, Line: json.RawMessage(textLine)})
	require(lineCounts{turns: 1}, state.Event{BridgeSeq: 12, Line: json.RawMessage(textLine)})
	// Outside what was fetched: counted from the line.
	two := lineCounts{tools: 2, bytes: n(twoTools)}
	require(two, state.Event{BridgeSeq: 13, Line: json.RawMessage(twoTools)})
	require(two, state.Event{BridgeSeq: 10, Line: json.RawMessage(twoTools)})
	in = nil
	require(two, state.Event{BridgeSeq: 1, Line: json.RawMessage(twoTools)})
}
