package ui

import (
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The activity graph of a spore page (docs/page.md "Activity"): turns,
// tool calls and tokens per hour over the last 7 days, from the spore's
// record alone (state.Spore.Activity, counted by ingest), drawn as one
// inline SVG of three panels sharing a time axis. Hours with nothing get
// no bar, so a quiet spore's graph is a few hundred bytes.

// Geometry of the graph, in pixels.
const (
	graphHours  = state.MaxActivity
	graphBarW   = 3
	graphLeft   = 44 // room for the y labels
	graphPlotW  = graphHours * graphBarW
	graphPanelH = 40
	graphHeadH  = 16 // a panel's name above it
	graphAxisH  = 16 // the day labels under the last panel
)

// activityView is what the activity graph of a spore page shows.
type activityView struct {
	// Summary says the week in words, for everyone and for screen
	// readers (the SVG is labelled by it).
	Summary string
	Empty   bool
	Width   int
	Height  int
	PlotX   int
	PlotR   int // the plot's right edge
	Panels  []activityPanel
	Ticks   []axisTick
}

// activityPanel is one series.
type activityPanel struct {
	Name  string // "turns per hour"
	Class string // its CSS class (colour)
	Top   int    // the plot's top
	Base  int    // its baseline
	NameY int
	Max   string // the largest hour, labelled at the top of the y axis
	MaxY  int
	Bars  []bar
}

// axisTick marks the start of a UTC day.
type axisTick struct {
	X     int
	Y1    int
	Y2    int
	TextY int
	Label string
}

// activityOf builds the graph from the spore's record.
func activityOf(sp state.Spore, now time.Time) activityView {
	now = now.UTC()
	last := now.Truncate(time.Hour)
	first := last.Add(-(graphHours - 1) * time.Hour)
	hourTitle := func(i int) string { return first.Add(time.Duration(i) * time.Hour).Format("Mon 2 Jan 15:00 UTC") }

	turns := hoursOf(sp.Activity, now, graphHours, func(h state.HourActivity) int64 { return h.Turns })
	tools := hoursOf(sp.Activity, now, graphHours, func(h state.HourActivity) int64 { return h.ToolCalls })
	in := hoursOf(sp.Activity, now, graphHours, func(h state.HourActivity) int64 { return h.InputTokens })
	out := hoursOf(sp.Activity, now, graphHours, func(h state.HourActivity) int64 { return h.OutputTokens })
	tokens := make([]int64, graphHours)
	var sum struct{ turns, tools, in, out, cost int64 }
	for i := range tokens {
		tokens[i] = state.AddCount(in[i], out[i])
		sum.turns = state.AddCount(sum.turns, turns[i])
		sum.tools = state.AddCount(sum.tools, tools[i])
		sum.in = state.AddCount(sum.in, in[i])
		sum.out = state.AddCount(sum.out, out[i])
	}
	for _, h := range sp.Activity {
		if !h.Hour.Before(first) && !h.Hour.After(last) {
			sum.cost = state.AddCount(sum.cost, h.CostMicros)
		}
	}

	v := activityView{PlotX: graphLeft, PlotR: graphLeft + graphPlotW, Width: graphLeft + graphPlotW + 4}
	if sum.turns == 0 && sum.tools == 0 && state.AddCount(sum.in, sum.out) == 0 && sum.cost == 0 {
		v.Empty = true
		v.Summary = "No activity in the last 7 days."
		return v
	}
	v.Summary = fmt.Sprintf("Last 7 days: %s turns, %s tool calls, %s tokens (%s in, %s out), %s.",
		count(sum.turns), count(sum.tools), count(state.AddCount(sum.in, sum.out)), count(sum.in), count(sum.out), dollars(sum.cost))

	series := []struct {
		name, class string
		vals        []int64
		title       func(i int) string
	}{
		{"turns per hour", "s-turns", turns, func(i int) string { return fmt.Sprintf("%s: %d turns", hourTitle(i), turns[i]) }},
		{"tool calls per hour", "s-tools", tools, func(i int) string { return fmt.Sprintf("%s: %d tool calls", hourTitle(i), tools[i]) }},
		{"tokens per hour", "s-tokens", tokens, func(i int) string {
			return fmt.Sprintf("%s: %s tokens (%s in, %s out)", hourTitle(i), count(tokens[i]), count(in[i]), count(out[i]))
		}},
	}
	y := 0
	for _, s := range series {
		top := y + graphHeadH
		var peak int64
		for _, x := range s.vals {
			peak = max(peak, x)
		}
		v.Panels = append(v.Panels, activityPanel{
			Name: s.name, Class: s.class, Top: top, Base: top + graphPanelH, NameY: top - 4,
			Max: count(peak), MaxY: top + 8, Bars: bars(s.vals, graphLeft, top, graphBarW, graphPanelH, s.title),
		})
		y = top + graphPanelH
	}
	v.Height = y + graphAxisH
	for i := range graphHours {
		if h := first.Add(time.Duration(i) * time.Hour); h.Hour() == 0 {
			x := graphLeft + i*graphBarW
			v.Ticks = append(v.Ticks, axisTick{X: x, Y1: graphHeadH, Y2: y + 3, TextY: y + 13, Label: h.Format("Mon 2")})
		}
	}
	return v
}
