package ui

import (
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Bar charts drawn on the server as inline SVG (the activity graph and
// the fleet's sparklines): the geometry is worked out here, in whole
// pixels, and the templates only print numbers and text, through
// html/template like everything else. No script, no style attribute
// (the CSP allows none): colours come from fleet.css classes.

// bar is one bar of a chart.
type bar struct {
	X, Y, W, H int
	Title      string // the bar's hover text, "" for none
}

// bars lays out one bar per value, w pixels wide each, from x0, scaled
// so the largest fills height above baseline y0+height. A value above 0
// gets at least one pixel; zero gets no bar at all (fewer nodes).
func bars(vals []int64, x0, y0, w, height int, title func(i int) string) []bar {
	var top int64
	for _, v := range vals {
		top = max(top, v)
	}
	if top == 0 {
		return nil
	}
	out := make([]bar, 0, len(vals))
	for i, v := range vals {
		if v <= 0 {
			continue
		}
		h := int(float64(v) / float64(top) * float64(height))
		h = max(h, 1)
		b := bar{X: x0 + i*w, Y: y0 + height - h, W: max(w-1, 1), H: h}
		if title != nil {
			b.Title = title(i)
		}
		out = append(out, b)
	}
	return out
}

// hoursOf spreads a spore's activity over the n hours that end with
// now's (index n-1), each hour's value picked by f.
func hoursOf(hs []state.HourActivity, now time.Time, n int, f func(state.HourActivity) int64) []int64 {
	out := make([]int64, n)
	last := now.UTC().Truncate(time.Hour)
	first := last.Add(-time.Duration(n-1) * time.Hour)
	for _, h := range hs {
		if h.Hour.Before(first) || h.Hour.After(last) {
			continue
		}
		i := int(h.Hour.Sub(first) / time.Hour)
		out[i] = state.AddCount(out[i], f(h))
	}
	return out
}

// count says n in a few characters: 950, 12.3k, 4.56M, 7.1G.
func count(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	case n < 1_000_000_000:
		return trimZero(fmt.Sprintf("%.2f", float64(n)/1e6)) + "M"
	}
	return trimZero(fmt.Sprintf("%.2f", float64(n)/1e9)) + "G"
}

func trimZero(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// dollars says a cost in micro-dollars: $0.42, $12.30, <$0.01, $0.
func dollars(micros int64) string {
	switch {
	case micros == 0:
		return "$0"
	case micros < 10_000:
		return "<$0.01"
	}
	return fmt.Sprintf("$%.2f", float64(micros)/1e6)
}
