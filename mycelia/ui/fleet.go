package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// Strip buckets: what the strip at the top of the fleet page counts.
const (
	BucketWorking  = "working"  // Healthy, a turn running
	BucketIdle     = "idle"     // Healthy, nothing to do (or starting)
	BucketBlocked  = "blocked"  // waits for a person
	BucketDead     = "dead"     // should run, nothing alive
	BucketAsleep   = "asleep"   // Paused or Stopped, as desired
	BucketSuspect  = "suspect"  // runs, bridge not answering
	BucketError    = "error"    // breaker open: a person must reset
	BucketDiverged = "diverged" // reality differs in another way
)

// stripOrder: the first five always show, the rest when not zero.
var stripOrder = []string{BucketWorking, BucketIdle, BucketBlocked, BucketDead, BucketAsleep, BucketSuspect, BucketError, BucketDiverged}

const alwaysShown = 5

// bucket puts a spore in one strip bucket.
func bucket(s reconcile.SporeHealth) string {
	switch s.Effective {
	case reconcile.Healthy:
		if s.Observed.Activity == bridge.StateWorking {
			return BucketWorking
		}
		return BucketIdle
	case reconcile.Blocked:
		return BucketBlocked
	case reconcile.Dead:
		return BucketDead
	case reconcile.Paused, reconcile.Stopped:
		return BucketAsleep
	case reconcile.Error:
		return BucketError
	case reconcile.Diverged:
		return BucketDiverged
	}
	return BucketSuspect
}

type fleetPage struct {
	Nonce      string
	Title      string
	Strip      []stripItem
	Total      int
	Colonies   []colonyGroup
	Orphans    []string
	ObserveErr string
	Missing    string
}

type stripItem struct {
	Bucket string
	N      int
}

type colonyGroup struct {
	Name   string
	Spores []fleetRow
}

type fleetRow struct {
	ID        string
	Href      string // "" for an id that is not one (a hand-edited store)
	Rank      string
	Swarm     string
	Role      string
	Desired   string
	Observed  string
	Effective string
	Bucket    string
	Reason    string
	Code      string
	Now       nowLine
	LastSeq   uint64
	Pending   int
}

// nowLine is what a spore is doing now: its last tool call or text.
type nowLine struct {
	Marker string
	Kind   string
	Text   string
	Error  bool
	Ago    string
	At     string
}

func (h *Handler) fleetRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /ui/{$}", h.fleet)
}

// fleet is GET /ui/: a read-only pass's result and each spore's last
// events.
func (h *Handler) fleet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if h.Pass == nil {
		h.internal(w, r, errors.New("no pass"))
		return
	}
	out, err := h.Pass.Run(ctx, reconcile.Options{})
	if err != nil {
		h.internal(w, r, err)
		return
	}
	page := fleetPage{Nonce: nonceOf(r), Title: "Fleet", Total: len(out.Spores), Orphans: slices.Clone(out.Orphans)}
	if out.ObserveErr != nil {
		page.ObserveErr = out.ObserveErr.Error()
	}
	now := h.now()
	rows := map[string][]fleetRow{}
	counts := map[string]int{}
	err = h.Store.View(ctx, func(tx state.Tx) error {
		for _, s := range out.Spores {
			row := rowOf(s)
			counts[row.Bucket]++
			if s.LastSeq > 0 {
				evs, err := tx.Tail(ctx, s.ID, TailEvents)
				if err != nil && !errors.Is(err, state.ErrNotFound) {
					return fmt.Errorf("tail of %s: %w", s.ID, err)
				}
				row.Now = doingNow(evs, now)
			}
			rows[s.Colony] = append(rows[s.Colony], row)
		}
		return nil
	})
	if err != nil {
		h.internal(w, r, err)
		return
	}
	for _, b := range stripOrder {
		if n := counts[b]; n > 0 || len(page.Strip) < alwaysShown {
			page.Strip = append(page.Strip, stripItem{Bucket: b, N: n})
		}
	}
	names := make([]string, 0, len(rows))
	for c := range rows {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		rs := rows[c]
		slices.SortStableFunc(rs, func(a, b fleetRow) int { return strings.Compare(a.ID, b.ID) })
		page.Colonies = append(page.Colonies, colonyGroup{Name: c, Spores: rs})
	}
	slices.Sort(page.Orphans)
	page.Orphans = slices.Compact(page.Orphans)
	h.render(w, r, http.StatusOK, "fleet.html", page)
}

func rowOf(s reconcile.SporeHealth) fleetRow {
	row := fleetRow{
		ID: s.ID, Rank: string(s.Rank), Swarm: s.Swarm, Role: s.Role, Desired: string(s.Desired),
		Effective: string(s.Effective), Bucket: bucket(s), Reason: s.Reason, Code: string(s.Code),
		LastSeq: s.LastSeq, Pending: s.Pending,
	}
	if state.ValidateID(s.ID) == nil {
		row.Href = sporeHref(s.ID)
	}
	o := s.Observed
	row.Observed = string(o.Pod) + " · " + string(o.Bridge)
	if o.Activity != "" {
		row.Observed += " · " + string(o.Activity)
	}
	if o.Restarts > 0 {
		row.Observed += fmt.Sprintf(" · %d restarts", o.Restarts)
	}
	if row.Code == row.Reason {
		row.Code = ""
	}
	return row
}

func sporeHref(id string) string {
	return Prefix + "spores/" + url.PathEscape(id)
}

// doingNow picks, from the last events, the last tool call or agent text;
// else the last line of any kind. It is one line, cut to
// transcript.Width.
func doingNow(evs []state.Event, now time.Time) nowLine {
	var last, pick *transcript.Line
	for i := len(evs) - 1; i >= 0 && pick == nil; i-- {
		ls := transcript.Lines(evs[i])
		for j := len(ls) - 1; j >= 0; j-- {
			l := ls[j]
			if last == nil {
				last = &l
			}
			if l.Kind == transcript.KindToolUse || l.Kind == transcript.KindText {
				pick = &l
				break
			}
		}
	}
	if pick == nil {
		pick = last
	}
	if pick == nil {
		return nowLine{}
	}
	return nowLine{
		Marker: marker(*pick), Kind: string(pick.Kind), Text: firstLine(pick.Text, transcript.Width), Error: pick.Error,
		Ago: ago(now.Sub(pick.At)), At: pick.At.UTC().Format(time.RFC3339),
	}
}

// firstLine is s's first non-blank line, cut at width runes, with "…"
// when anything was left out.
func firstLine(s string, width int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if r := []rune(s); len(r) > width {
		s, cut = string(r[:width-1]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// ago says how long ago, roughly: "40s", "3m", "2h", "5d".
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// marker says what a line is, in front of its text, as chat does.
func marker(l transcript.Line) string {
	switch l.Kind {
	case transcript.KindPrompt, transcript.KindMessage:
		return ">"
	case transcript.KindUserText:
		return "»"
	case transcript.KindText:
		return ""
	case transcript.KindThinking:
		return "~"
	case transcript.KindToolUse:
		return "→"
	case transcript.KindToolResult:
		if l.Error {
			return "← error:"
		}
		return "←"
	case transcript.KindResult:
		if l.Error {
			return "✗"
		}
		return "✓"
	case transcript.KindLifecycle, transcript.KindBreaker:
		return "—"
	case transcript.KindSession, transcript.KindSystem, transcript.KindBridge:
		if l.Error {
			return "!"
		}
		return "·"
	}
	return "?"
}

// lineClass is a line's CSS class: its kind, and "err" when it failed.
func lineClass(l transcript.Line) string {
	c := "l-" + strings.ReplaceAll(string(l.Kind), "_", "-")
	if l.Error {
		c += " err"
	}
	return c
}
