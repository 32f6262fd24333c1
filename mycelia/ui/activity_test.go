package ui

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestBars(t *testing.T) {
	require.Nil(t, bars([]int64{0, 0}, 0, 0, 3, 10, nil), "nothing: no bars")
	got := bars([]int64{0, 5, 10, 1, 0}, 40, 2, 3, 10, func(i int) string { return string(rune('a' + i)) })
	require.Equal(t, []bar{
		{X: 43, Y: 7, W: 2, H: 5, Title: "b"},
		{X: 46, Y: 2, W: 2, H: 10, Title: "c"},
		{X: 49, Y: 11, W: 2, H: 1, Title: "d"}, // a tenth of 10 px: one pixel
	}, got)
	require.Equal(t, []bar{{X: 0, Y: 0, W: 1, H: 4}}, bars([]int64{7}, 0, 0, 1, 4, nil), "bars of 1 px keep their width")
}

func TestHoursOf(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)
	hs := []state.HourActivity{
		{Hour: now.Truncate(time.Hour).Add(-5 * time.Hour), ToolCalls: 1}, // before the window
		{Hour: now.Truncate(time.Hour).Add(-2 * time.Hour), ToolCalls: 2},
		{Hour: now.Truncate(time.Hour), ToolCalls: 3},
		{Hour: now.Truncate(time.Hour).Add(time.Hour), ToolCalls: 9}, // after now: a clock ahead
	}
	require.Equal(t, []int64{0, 2, 0, 3}, hoursOf(hs, now, 4, func(h state.HourActivity) int64 { return h.ToolCalls }))
}

func TestCountAndDollars(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1k", 1234: "1.2k", 120_000: "120k", 4_560_000: "4.56M", 7_100_000_000: "7.1G"} {
		require.Equal(t, want, count(n), n)
	}
	for m, want := range map[int64]string{0: "$0", 9_999: "<$0.01", 420_000: "$0.42", 12_300_000: "$12.30"} {
		require.Equal(t, want, dollars(m), m)
	}
}

func TestActivityGraph(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC) // a Friday
	hour := now.Truncate(time.Hour)
	sp := state.Spore{
		Wish: state.Wish{ID: "a"},
		Status: state.Status{IngestRecord: state.IngestRecord{Activity: []state.HourActivity{
			{Hour: hour.Add(-8 * 24 * time.Hour), Turns: 99, CostMicros: 99_000_000}, // older than the week
			{Hour: hour.Add(-30 * time.Hour), Turns: 1, ToolCalls: 2, InputTokens: 1500, OutputTokens: 500, CostMicros: 10_000},
			{Hour: hour, Turns: 3, ToolCalls: 8, InputTokens: 100, OutputTokens: 20, CostMicros: 410_000},
		}}},
	}
	v := activityOf(sp, now)
	require.False(t, v.Empty)
	require.Equal(t, "Last 7 days: 4 turns, 10 tool calls, 2.1k tokens (1.6k in, 520 out), $0.42.", v.Summary)
	require.Len(t, v.Panels, 3)
	require.Equal(t, []string{"turns per hour", "tool calls per hour", "tokens per hour"}, []string{v.Panels[0].Name, v.Panels[1].Name, v.Panels[2].Name})
	turns := v.Panels[0]
	require.Equal(t, "3", turns.Max)
	require.Len(t, turns.Bars, 2)
	require.Equal(t, "Thu 30 Apr 04:00 UTC: 1 turns", turns.Bars[0].Title)
	last := turns.Bars[1]
	require.Equal(t, "Fri 1 May 10:00 UTC: 3 turns", last.Title)
	require.Equal(t, v.PlotR-graphBarW, last.X, "now's hour is the last slot")
	require.Equal(t, turns.Top, last.Y, "the largest hour fills the panel")
	require.Equal(t, "Thu 30 Apr 04:00 UTC: 2k tokens (1.5k in, 500 out)", v.Panels[2].Bars[0].Title)
	require.Len(t, v.Ticks, 7, "a tick at each UTC midnight of the week")
	require.Equal(t, "Fri 1", v.Ticks[6].Label)

	var b strings.Builder
	require.NoError(t, pages().ExecuteTemplate(&b, "activity", v))
	out := b.String()
	require.Contains(t, out, `<p class="summary" id="activity-sum">Last 7 days: 4 turns`)
	require.Contains(t, out, `role="img" aria-labelledby="activity-sum"`)
	require.Contains(t, out, "<title>Fri 1 May 10:00 UTC: 3 turns</title>")
	require.Contains(t, out, `>tool calls per hour</text>`)
	require.Contains(t, out, `>Thu 30</text>`)
	require.Equal(t, 6, strings.Count(out, "<rect "))
	require.NotContains(t, out, "http", "no xmlns, nothing from elsewhere")
	require.NotContains(t, out, "style=", "the CSP allows no style attribute")
	require.NotContains(t, out, "<script")

	empty := activityOf(state.Spore{Wish: state.Wish{ID: "quiet"}}, now)
	require.True(t, empty.Empty)
	b.Reset()
	require.NoError(t, pages().ExecuteTemplate(&b, "activity", empty))
	require.Contains(t, b.String(), "No activity in the last 7 days.")
	require.NotContains(t, b.String(), "<svg")
}

// A week with every hour busy stays a small SVG.
func TestActivityGraphSize(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)
	var hs []state.HourActivity
	for i := state.MaxActivity - 1; i >= 0; i-- {
		hs = append(hs, state.HourActivity{Hour: now.Truncate(time.Hour).Add(-time.Duration(i) * time.Hour),
			Turns: int64(i%5 + 1), ToolCalls: int64(i % 17), InputTokens: int64(i * 1000), OutputTokens: 77, CostMicros: 1})
	}
	var b strings.Builder
	require.NoError(t, pages().ExecuteTemplate(&b, "activity", activityOf(state.Spore{Wish: state.Wish{ID: "a"}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: hs}}}, now)))
	require.Less(t, b.Len(), 64<<10, "a full week is %d bytes", b.Len())
	t.Logf("a full week's graph: %d bytes", b.Len())
}

// TestSumsNeverWrap: counts at the largest int64 (an agent's line can
// claim anything; ingest saturates there) add up to the largest, never
// to a negative number, in the fleet's "today" and in the graph.
func TestSumsNeverWrap(t *testing.T) {
	now := time.Date(2026, 11, 30, 15, 30, 0, 0, time.UTC)
	big := int64(math.MaxInt64)
	hs := []state.HourActivity{
		{Hour: now.Truncate(time.Hour).Add(-time.Hour), Turns: big, ToolCalls: big, InputTokens: big, OutputTokens: big, CostMicros: big},
		{Hour: now.Truncate(time.Hour), Turns: big, ToolCalls: big, InputTokens: big, OutputTokens: big, CostMicros: big},
	}
	d := todayOf(hs, now)
	require.NotContains(t, d.Tokens+d.Cost+d.Title, "-", "%+v", d)
	v := activityOf(state.Spore{Wish: state.Wish{ID: "a"}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: hs}}}, now)
	var b strings.Builder
	require.NoError(t, pages().ExecuteTemplate(&b, "activity", v))
	require.NotContains(t, b.String(), ">-", "a negative figure")
}
