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
	"github.com/sporectl/sporectl/reconcile/policy"
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
	case policy.Healthy:
		if s.Observed.Activity == bridge.StateWorking {
			return BucketWorking
		}
		return BucketIdle
	case policy.Blocked:
		return BucketBlocked
	case policy.Dead:
		return BucketDead
	case policy.Paused, policy.Stopped:
		return BucketAsleep
	case policy.Error:
		return BucketError
	case policy.Diverged:
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
	// Filter is what the page shows (fleet_filter.go).
	Filter fleetFilter
	// Pager says which of the rows Filter lets through this page shows.
	Pager pager
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

	created time.Time
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

// fleet is GET /ui/?colony=&state=&q=&page=: a read-only pass's result
// (shared by the requests of the last FleetShare) and the last events and
// record of the spores on the page, filtered and paged.
func (h *Handler) fleet(w http.ResponseWriter, r *http.Request) {
	f, err := parseFleetFilter(r.URL.Query())
	if err != nil {
		h.error(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d, err := h.sharedFleet(r.Context(), h.fleetShare())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	p, err := h.fleetPageOf(r.Context(), d, f, nonceOf(r), h.fleetRows())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	h.renderFleet(w, r, p)
}

// fleetData is the whole fleet as one pass saw it, before any filter:
// what the page and every live stream render from. Its rows hold the
// pass's view of every spore; what a row adds from the store (its last
// events, its activity) is read only for the rows a page shows, once per
// fleetData (fill).
type fleetData struct {
	built      time.Time // wall clock, for the shared cache
	now        time.Time // the page's clock when the pass ended: every row's ages
	total      int
	rows       []fleetRow // by colony, then id: the pass's view alone, never changed
	recs       map[string]*state.Spore
	orphans    []string
	observeErr string

	fillMu sync.Mutex
	filled []bool     // full[i] is rows[i] with its events and activity
	full   []fleetRow // written once, by fill

	mu    sync.Mutex
	frags map[fleetFilter]string // fragment(): the rows rendered, by filter
}

// buildFleet runs the read-only pass. Activity comes from the records the
// pass loaded (its snapshot: no second read of every record).
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
	d := fleetOf(out.Result, recs, h.now())
	if out.ObserveErr != nil {
		d.observeErr = out.ObserveErr.Error()
	}
	return d, nil
}

// fleetOf is the fleet of a pass's result, each spore's row as the pass
// saw it; recs is the pass's snapshot of the records (a spore missing
// from it has its record read when its row is filled).
func fleetOf(out reconcile.Result, recs map[string]*state.Spore, now time.Time) *fleetData {
	d := &fleetData{built: time.Now(), now: now, total: len(out.Spores), recs: recs, orphans: slices.Clone(out.Orphans)}
	d.rows = make([]fleetRow, len(out.Spores))
	for i, s := range out.Spores {
		d.rows[i] = rowOf(s)
	}
	slices.SortStableFunc(d.rows, func(a, b fleetRow) int {
		if c := strings.Compare(a.Colony, b.Colony); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	d.filled, d.full = make([]bool, len(d.rows)), make([]fleetRow, len(d.rows))
	slices.Sort(d.orphans)
	d.orphans = slices.Compact(d.orphans)
	return d
}

// fill reads, for the rows at idx not yet filled, each spore's last
// TailEvents events and, when the pass's snapshot has no record of it or
// its tail shows lines ingested after that snapshot, its record again.
// Rows are read in a few transactions at once: on PostgreSQL each tail
// is a round trip, and one transaction is one connection. Requests for
// the same fleetData wait for each other here, so no row is read twice.
func (h *Handler) fill(ctx context.Context, d *fleetData, idx []int) error {
	d.fillMu.Lock()
	defer d.fillMu.Unlock()
	var todo []int
	for _, i := range idx {
		if !d.filled[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	workers := min(fleetReaders, max(1, len(todo)/64))
	per := (len(todo) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, len(todo)), min((w+1)*per, len(todo))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = h.Store.View(ctx, func(tx state.Tx) error {
				for _, i := range todo[lo:hi] {
					row := d.rows[i]
					if err := fillRow(ctx, tx, &row, d.recs[row.ID], d.now); err != nil {
						return err
					}
					d.full[i] = row
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, i := range todo {
		d.filled[i] = true
	}
	return nil
}

// fleetReaders bounds the read transactions one fleet read runs at once
// (PostgreSQL's pool holds 4 connections by default: one is left).
const fleetReaders = 3

// fillRow adds to a spore's row its last events and its activity from
// sp, the pass's snapshot of its record (read again when its tail shows
// lines ingested after it).
func fillRow(ctx context.Context, tx state.Tx, row *fleetRow, sp *state.Spore, now time.Time) error {
	var evs []state.Event
	if row.LastSeq > 0 {
		var err error
		evs, err = tx.Tail(ctx, row.ID, TailEvents)
		if _, damaged := state.SporeDamage(err); damaged {
			// Its damage is its own (its row says so once a pass has
			// judged it): the row is shown without its last lines.
			evs, err = nil, nil
		}
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return fmt.Errorf("tail of %s: %w", row.ID, err)
		}
		row.Now = doingNow(evs, now)
	}
	if sp == nil || ingestedSince(evs, sp.BridgeSeq) {
		fresh, err := tx.Spore(ctx, row.ID)
		_, damaged := state.SporeDamage(err)
		switch {
		case err == nil:
			sp = &fresh
		case damaged:
			// Shown as the pass judged it: Error, its damage named.
		case !errors.Is(err, state.ErrNotFound):
			return fmt.Errorf("read spore %s: %w", row.ID, err)
		}
	}
	if sp != nil {
		row.Today = todayOf(sp.Activity, now)
		row.Spark = sparkOf(sp.Activity, now)
	}
	row.Since = sinceOf(evs, row.created, now)
	return nil
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

// fleetPageOf is the fleet page of d under filter f, its rows read (fill)
// first. The strip and the choices count the spores that f's colony and
// text let through, on every page, so the state links say how many each
// would show. The rows f lets through are ordered with the spores that
// need attention (policy.OK says no) first, then the others, each by
// colony and id; a page holds perPage of them (0: all), shown by colony
// and id. A page past the last is the last.
func (h *Handler) fleetPageOf(ctx context.Context, d *fleetData, f fleetFilter, nonce string, perPage int) (fleetPage, error) {
	counts := map[string]int{}
	var colonies []string
	var bad, fine []int
	for i, row := range d.rows {
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
		if policy.OK(policy.Health(row.Effective)) {
			fine = append(fine, i)
		} else {
			bad = append(bad, i)
		}
	}
	shown := append(bad, fine...)
	pg := pager{Page: 1, Pages: 1, Of: len(shown)}
	if perPage > 0 && len(shown) > perPage {
		pg.Pages = (len(shown) + perPage - 1) / perPage
		pg.Page = min(max(f.Page, 1), pg.Pages)
		lo := (pg.Page - 1) * perPage
		shown = shown[lo:min(lo+perPage, len(shown))]
		pg.First, pg.Last = lo+1, lo+len(shown)
		at := func(n int) string { g := f; g.Page = n; return g.href(Prefix) }
		if pg.Page > 1 {
			pg.FirstHref, pg.PrevHref = at(1), at(pg.Page-1)
		}
		if pg.Page < pg.Pages {
			pg.NextHref, pg.LastHref = at(pg.Page+1), at(pg.Pages)
		}
	}
	f.Page = pg.Page
	slices.Sort(shown) // rows are by colony, then id
	if err := h.fill(ctx, d, shown); err != nil {
		return fleetPage{}, err
	}

	p := fleetPage{Nonce: nonce, Title: "Fleet", Total: d.total, Orphans: d.orphans, ObserveErr: d.observeErr,
		Filter: f, Pager: pg, EventsURL: f.href(Prefix + "fleet/events")}
	for _, i := range shown {
		row := d.full[i]
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
	return p, nil
}

// pager is where a page of the fleet is among the rows its filter lets
// through (Pages is 1 when they fit on one page, and the page shows no
// pager).
type pager struct {
	Page, Pages int
	Of          int // rows the filter lets through
	First, Last int // the rows on this page, from 1
	// Links to the first, previous, next and last pages ("" on the page
	// itself).
	FirstHref, PrevHref, NextHref, LastHref string
}

func rowOf(s reconcile.SporeHealth) fleetRow {
	row := fleetRow{
		ID: s.ID, Colony: s.Colony, Rank: string(s.Rank), Swarm: s.Swarm, Role: s.Role, Desired: string(s.Desired),
		Effective: string(s.Effective), Bucket: bucket(s), Reason: s.Reason, Code: string(s.Code),
		LastSeq: s.LastSeq, Pending: s.Pending, created: s.Created,
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
