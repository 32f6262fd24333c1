package ui

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// What each fleet row adds to the pass's view of a spore (docs/page.md
// "The fleet"), and the page's filter.

// MaxFilterText bounds ?q=, in bytes.
const MaxFilterText = 64

// MaxFleetPage bounds ?page=.
const MaxFleetPage = 1_000_000

// fleetFilter is ?colony=NAME&state=BUCKET&q=TEXT&page=N; empty means
// all, and page 1.
type fleetFilter struct {
	Colony string
	State  string
	Q      string
	Page   int // 0 or 1: the first
}

// filterLink is one choice of the filter bar.
type filterLink struct {
	Label   string
	N       int // for states: how many spores it would show
	Href    string
	Current bool
}

// parseFleetFilter checks the fleet's parameters: each at most once, a
// colony that is a colony name, a state that is a strip bucket, a text
// of at most MaxFilterText bytes of printable UTF-8, a page from 1 to
// MaxFleetPage in decimal digits. Anything else is an error for a 400,
// and no pass runs.
func parseFleetFilter(q url.Values) (fleetFilter, error) {
	var f fleetFilter
	for k, vs := range q {
		switch k {
		case "colony", "state", "q", "page":
			if len(vs) != 1 {
				return f, fmt.Errorf("give %s once", k)
			}
		default:
			return f, fmt.Errorf("unknown parameter %q: the fleet takes colony=NAME, state=BUCKET, q=TEXT and page=N", k)
		}
	}
	f.Colony, f.State, f.Q = q.Get("colony"), q.Get("state"), q.Get("q")
	if f.Colony != "" {
		if err := state.ValidateName("colony", f.Colony); err != nil {
			return f, fmt.Errorf("invalid colony=: %w", err)
		}
	}
	if f.State != "" && !slices.Contains(stripOrder, f.State) {
		return f, fmt.Errorf("invalid state=%q: one of %s", f.State, strings.Join(stripOrder, ", "))
	}
	if len(f.Q) > MaxFilterText {
		return f, fmt.Errorf("invalid q=: at most %d bytes", MaxFilterText)
	}
	if !utf8.ValidString(f.Q) {
		return f, fmt.Errorf("invalid q=: not UTF-8 text")
	}
	for _, r := range f.Q {
		if r < 0x20 || r == 0x7f {
			return f, fmt.Errorf("invalid q=: a control character")
		}
	}
	if pg := q.Get("page"); pg != "" {
		n, err := pageNumber(pg)
		if err != nil {
			return f, fmt.Errorf("invalid page=%q: %w", pg, err)
		}
		f.Page = n
	}
	return f, nil
}

// pageNumber is s as a page number: decimal digits only (no sign, no
// space), from 1 to MaxFleetPage.
func pageNumber(s string) (int, error) {
	if len(s) > len(strconv.Itoa(MaxFleetPage)) || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("a page number from 1 to %d", MaxFleetPage)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxFleetPage {
		return 0, fmt.Errorf("a page number from 1 to %d", MaxFleetPage)
	}
	return n, nil
}

// href is path with f's non-empty parameters.
func (f fleetFilter) href(path string) string {
	v := url.Values{}
	for k, s := range map[string]string{"colony": f.Colony, "state": f.State, "q": f.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Page > 1 {
		v.Set("page", strconv.Itoa(f.Page))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// matchBut says whether row passes f's colony and text (its state is
// judged apart, so the strip can count what each state would show).
// The text matches anywhere in the id, ignoring case.
func (f fleetFilter) matchBut(row fleetRow) bool {
	if f.Colony != "" && row.Colony != f.Colony {
		return false
	}
	return f.Q == "" || strings.Contains(strings.ToLower(row.ID), strings.ToLower(f.Q))
}

// since is how long a spore has been in its state.
type since struct {
	Text  string // "3m", "≥ 2h"; "" when nothing says
	At    string // RFC 3339 of the transition, "" with a bound
	Bound bool   // the transition is older than the events read
}

// transitions are the lifecycle actions that change what a spore is:
// its health as a pass recorded it, a start or stop, a wish. (Deliveries,
// loops, reports and token notes are no transition.)
var transitions = map[string]bool{
	"created": true, "health": true, "start": true, "restart": true, "start-failed": true, "stop": true,
	"wake": true, "sleep": true, "slept": true, "reset": true,
}

// sinceOf finds, in the last events read (oldest first), the last
// transition: a lifecycle event of one of those actions, or any breaker
// event. None there: when the events are the whole log, the spore has
// been so since it was created; else since before the oldest of them.
func sinceOf(evs []state.Event, created, now time.Time) since {
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Kind == state.KindBreaker || e.Kind == state.KindLifecycle && transitions[e.Action] {
			return since{Text: span(now.Sub(e.At)), At: e.At.UTC().Format(time.RFC3339)}
		}
	}
	if len(evs) > 0 && evs[0].Seq > 1 {
		return since{Text: "≥ " + span(now.Sub(evs[0].At)), Bound: true}
	}
	if created.IsZero() {
		return since{}
	}
	return since{Text: span(now.Sub(created)), At: created.UTC().Format(time.RFC3339)}
}

// span is a duration in one unit, rounded down: "40s", "3m", "2h", "5d".
func span(d time.Duration) string {
	return strings.TrimSuffix(strings.Replace(ago(d), "now", "0s ago", 1), " ago")
}

// today is a spore's tokens and cost since 00:00 UTC.
type today struct {
	Tokens string // input + output, "12.3k"
	Cost   string // "$0.42"
	Title  string // the figures in full, "" when all are 0
}

// todayOf adds up the hours of now's UTC day.
func todayOf(hs []state.HourActivity, now time.Time) today {
	day := now.UTC().Truncate(24 * time.Hour)
	var in, out, cost int64
	for _, h := range hs {
		if !h.Hour.Before(day) && !h.Hour.After(now) {
			in, out, cost = state.AddCount(in, h.InputTokens), state.AddCount(out, h.OutputTokens), state.AddCount(cost, h.CostMicros)
		}
	}
	t := today{Tokens: count(state.AddCount(in, out)), Cost: dollars(cost)}
	if in > 0 || out > 0 || cost > 0 {
		t.Title = fmt.Sprintf("since 00:00 UTC: %d input and %d output tokens, $%.6f", in, out, float64(cost)/1e6)
	}
	return t
}

// Geometry of a sparkline.
const (
	sparkHours = 24
	sparkBarW  = 3
	sparkH     = 16
)

// sparkline is a row's small bar chart: one SVG path, not a node per
// bar, since a fleet page draws a thousand of them.
type sparkline struct {
	W, H  int
	D     string // the path of every bar ("" for none); digits and letters only
	Label string // what it shows, in words (its <title>)
}

// sparkOf draws tool calls per hour over the last 24 hours.
func sparkOf(hs []state.HourActivity, now time.Time) sparkline {
	vals := hoursOf(hs, now, sparkHours, func(h state.HourActivity) int64 { return h.ToolCalls })
	var sum, peak int64
	for _, v := range vals {
		sum, peak = sum+v, max(peak, v)
	}
	var d strings.Builder
	for _, b := range bars(vals, 0, 0, sparkBarW, sparkH, nil) {
		fmt.Fprintf(&d, "M%d %dh%dv%dh-%dz", b.X, b.Y, b.W, b.H, b.W)
	}
	return sparkline{W: sparkHours * sparkBarW, H: sparkH, D: d.String(),
		Label: fmt.Sprintf("tool calls per hour, last 24 h: %d in all, at most %d in an hour", sum, peak)}
}
