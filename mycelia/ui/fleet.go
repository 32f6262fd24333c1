package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
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
	// Filter is what the page shows (fleet_filter.go);
	// Shown counts the rows it let through.
	Filter fleetFilter
	Shown  int
	// States and ColonyNames are the filter's choices, each a link.
	States      []filterLink
	ColonyNames []filterLink
	// EventsURL is the live stream of this page's rows, with its filter.
	EventsURL string
}

type stripItem struct {
	Bucket string
	N      int
}

type colonyGroup struct {
	Name   string
	Href   string // the page filtered to this colony; "" for a name that is not one
	Spores []fleetRow
}

type fleetRow struct {
	ID        string
	Href      string // "" for an id that is not one (a hand-edited store)
	Colony    string
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
	// Since is how long the spore has been in its state.
	Since since
	// Today is its activity since 00:00 UTC, from its record.
	Today today
	// Spark is its tool calls per hour over the last 24 hours.
	Spark sparkline
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

func (h *Handler) fleetRoutes(m pageMux) {
	m.HandleFunc("GET /ui/{$}", h.fleet)
	m.HandleFunc("GET /ui/fleet/events", h.fleetEvents)
}

// fleet is GET /ui/?colony=&state=&q=: a read-only pass's result and
// each spore's last events and record, filtered.
func (h *Handler) fleet(w http.ResponseWriter, r *http.Request) {
	f, err := parseFleetFilter(r.URL.Query())
	if err != nil {
		h.error(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d, err := h.fleetNow(r.Context())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "fleet.html", d.page(f, nonceOf(r)))
}

// fleetData is the whole fleet as one pass and one read saw it, before
// any filter: what the page and every live stream render from.
type fleetData struct {
	built      time.Time // wall clock, for the shared cache
	total      int
	rows       []fleetRow // by colony, then id
	orphans    []string
	observeErr string

	mu    sync.Mutex
	frags map[fleetFilter]string // fragment(): the rows rendered, by filter
}

// buildFleet runs the read-only pass, then reads every spore's last
// TailEvents events. Activity comes from the records the pass loaded
// (its snapshot: no second read of every record); only a spore whose
// tail shows lines the pass ingested after that snapshot has its record
// read again, to count them.
func (h *Handler) buildFleet(ctx context.Context) (*fleetData, error) {
	if h.Pass == nil {
		return nil, errors.New("no pass")
	}
	out, err := h.Pass.Run(ctx, reconcile.Options{})
	if err != nil {
		return nil, err
	}
	recs := make(map[string]*state.Spore, len(out.Plans))
	for _, p := range out.Plans {
		recs[p.Spore.ID] = &p.Spore
	}
	d, err := h.fleetFrom(ctx, out.Result, recs)
	if err != nil {
		return nil, err
	}
	if out.ObserveErr != nil {
		d.observeErr = out.ObserveErr.Error()
	}
	return d, nil
}

// fleetFrom builds the fleet from a pass's result: each spore's last
// TailEvents events, and its record from recs (the pass's snapshot) or,
// when recs has none, from the store.
func (h *Handler) fleetFrom(ctx context.Context, out reconcile.Result, recs map[string]*state.Spore) (*fleetData, error) {
	d := &fleetData{built: time.Now(), total: len(out.Spores), orphans: slices.Clone(out.Orphans)}
	now := h.now()
	d.rows = make([]fleetRow, len(out.Spores))
	// Rows are read in a few transactions at once: on PostgreSQL each
	// tail is a round trip, and one transaction is one connection.
	workers := min(fleetReaders, max(1, len(out.Spores)/64))
	per := (len(out.Spores) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, len(out.Spores)), min((w+1)*per, len(out.Spores))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = h.Store.View(ctx, func(tx state.Tx) error {
				for i := lo; i < hi; i++ {
					row, err := fleetRowOf(ctx, tx, out.Spores[i], recs[out.Spores[i].ID], now)
					if err != nil {
						return err
					}
					d.rows[i] = row
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(d.rows, func(a, b fleetRow) int {
		if c := strings.Compare(a.Colony, b.Colony); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	slices.Sort(d.orphans)
	d.orphans = slices.Compact(d.orphans)
	return d, nil
}

// fleetReaders bounds the read transactions one fleet read runs at once
// (PostgreSQL's pool holds 4 connections by default: one is left).
const fleetReaders = 3

// fleetRowOf is one spore's row: the pass's view, its last events, and
// its activity from sp, the pass's snapshot of its record (read again
// when its tail shows lines ingested after it).
func fleetRowOf(ctx context.Context, tx state.Tx, s reconcile.SporeHealth, sp *state.Spore, now time.Time) (fleetRow, error) {
	row := rowOf(s)
	var evs []state.Event
	if s.LastSeq > 0 {
		var err error
		evs, err = tx.Tail(ctx, s.ID, TailEvents)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return row, fmt.Errorf("tail of %s: %w", s.ID, err)
		}
		row.Now = doingNow(evs, now)
	}
	if sp == nil || ingestedSince(evs, sp.BridgeSeq) {
		fresh, err := tx.Spore(ctx, s.ID)
		switch {
		case err == nil:
			sp = &fresh
		case !errors.Is(err, state.ErrNotFound):
			return row, fmt.Errorf("read spore %s: %w", s.ID, err)
		}
	}
	if sp != nil {
		row.Today = todayOf(sp.Activity, now)
		row.Spark = sparkOf(sp.Activity, now)
	}
	row.Since = sinceOf(evs, s.Created, now)
	return row, nil
}

// ingestedSince says whether evs end with an agent line past seq.
func ingestedSince(evs []state.Event, seq uint64) bool {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == state.KindAgent {
			return evs[i].BridgeSeq > seq
		}
	}
	return false
}

// page is the fleet page of d under filter f. The strip and the choices
// count the spores that f's colony and text let through, so the state
// links say how many each would show.
func (d *fleetData) page(f fleetFilter, nonce string) fleetPage {
	p := fleetPage{Nonce: nonce, Title: "Fleet", Total: d.total, Orphans: d.orphans, ObserveErr: d.observeErr,
		Filter: f, EventsURL: f.href(Prefix + "fleet/events")}
	counts := map[string]int{}
	var colonies []string
	for _, row := range d.rows {
		if len(colonies) == 0 || colonies[len(colonies)-1] != row.Colony {
			colonies = append(colonies, row.Colony)
		}
		if !f.matchBut(row) {
			continue
		}
		counts[row.Bucket]++
		if f.State != "" && row.Bucket != f.State {
			continue
		}
		p.Shown++
		if n := len(p.Colonies); n == 0 || p.Colonies[n-1].Name != row.Colony {
			g := colonyGroup{Name: row.Colony}
			if state.ValidateName("colony", row.Colony) == nil {
				g.Href = fleetFilter{Colony: row.Colony, State: f.State, Q: f.Q}.href(Prefix)
			}
			p.Colonies = append(p.Colonies, g)
		}
		g := &p.Colonies[len(p.Colonies)-1]
		g.Spores = append(g.Spores, row)
	}
	for _, b := range stripOrder {
		if n := counts[b]; n > 0 || len(p.Strip) < alwaysShown {
			p.Strip = append(p.Strip, stripItem{Bucket: b, N: n})
		}
	}
	p.States = append(p.States, filterLink{Label: "all", Href: fleetFilter{Colony: f.Colony, Q: f.Q}.href(Prefix), Current: f.State == ""})
	for _, s := range p.Strip {
		p.States = append(p.States, filterLink{Label: s.Bucket, N: s.N, Href: fleetFilter{Colony: f.Colony, State: s.Bucket, Q: f.Q}.href(Prefix),
			Current: f.State == s.Bucket})
	}
	p.ColonyNames = append(p.ColonyNames, filterLink{Label: "all", Href: fleetFilter{State: f.State, Q: f.Q}.href(Prefix), Current: f.Colony == ""})
	for _, c := range colonies {
		if state.ValidateName("colony", c) != nil {
			continue
		}
		p.ColonyNames = append(p.ColonyNames, filterLink{Label: c, Href: fleetFilter{Colony: c, State: f.State, Q: f.Q}.href(Prefix), Current: f.Colony == c})
	}
	return p
}

func rowOf(s reconcile.SporeHealth) fleetRow {
	row := fleetRow{
		ID: s.ID, Colony: s.Colony, Rank: string(s.Rank), Swarm: s.Swarm, Role: s.Role, Desired: string(s.Desired),
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
