package ui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

type sporePage struct {
	Nonce  string
	Title  string
	Spore  state.Spore
	Href   string
	Lines  []lineView
	First  uint64 // the page's first seq (0: empty page)
	Last   uint64 // its last seq
	Total  uint64 // the log's last seq
	Limit  int
	Older  string // link to the page before, "" at the log's start
	Newer  string // link to the page after, "" on the newest page
	Newest string // link to the newest page, "" on it
	// Live is set on the newest page: its script follows the log from
	// Last.
	Live      bool
	EventsURL string
	// Activity is the spore's activity graph (activity.go).
	Activity activityView
	// Prompt is the prompt box (prompt.go).
	Prompt promptBox
	// Over is the budget the spore has reached today, for the prompt box
	// (read only with pageParams.budget).
	Over string
	// Spend is what the spore spent today as budgets judge it, shown
	// against Budget, its own daily budget, when it has one
	// (docs/budgets.md). Reported is, with the gateway on, its agent's
	// own account of today (Spend is then the gateway's count), shown
	// with the count when either is not zero or it has a budget; nil in
	// the direct mode, where Spend is that account.
	Spend    state.Spend
	Reported *state.Spend
	Budget   state.Budget
}

func (h *Handler) sporeRoutes(m pageMux) {
	m.HandleFunc("GET /ui/spores/{id}", h.spore)
	m.HandleFunc("GET /ui/spores/{id}/events", h.events)
}

// pageParams are ?before=SEQ&limit=N, checked.
type pageParams struct {
	before uint64 // 0: the newest page
	limit  int
	// budget: read the budget the spore reached (sporePage.Over), which
	// the prompt box shows; not a query parameter, and not for the
	// export, which has no box.
	budget bool
}

// parsePage reads the pagination parameters; anything but a seq of 1 or
// more and a limit of 1 to MaxLimit, each given at most once, is an error
// (400).
func parsePage(q url.Values) (pageParams, error) {
	p := pageParams{limit: DefaultLimit}
	for k, vs := range q {
		switch k {
		case "before", "limit":
			if len(vs) != 1 {
				return p, fmt.Errorf("give %s once", k)
			}
		default:
			return p, fmt.Errorf("unknown parameter %q: the page takes before=SEQ and limit=N", k)
		}
	}
	if v, ok := q["before"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil || n < 1 {
			return p, fmt.Errorf("invalid before=%q: a sequence number, 1 or more", v[0])
		}
		p.before = n
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxLimit {
			return p, fmt.Errorf("invalid limit=%q: 1 to %d", v[0], MaxLimit)
		}
		p.limit = n
	}
	return p, nil
}

// spore is GET /ui/spores/{id}: one page of the conversation, read from
// the end of the log (newest page first). Its cost depends on the page's
// size only, never on how long the log is.
func (h *Handler) spore(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if state.ValidateID(id) != nil {
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	}
	p, err := parsePage(r.URL.Query())
	if err != nil {
		h.error(w, r, http.StatusBadRequest, err.Error())
		return
	}
	p.budget = true
	page, err := h.sporeData(ctx, id, p)
	if errors.Is(err, state.ErrNotFound) {
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	}
	if err != nil {
		h.internal(w, r, err)
		return
	}
	page.Nonce = nonceOf(r)
	page.Prompt = h.promptBox(r, page.Spore, page.Over)
	h.render(w, r, http.StatusOK, "spore.html", page)
}

// sporeData reads one page of a spore's conversation (p) and what the
// page shows about it, in one read-only transaction: everything but what
// depends on the request (nonce, prompt box). A missing spore is
// state.ErrNotFound.
func (h *Handler) sporeData(ctx context.Context, id string, p pageParams) (sporePage, error) {
	page := sporePage{Href: sporeHref(id), Limit: p.limit}
	var evs []state.Event
	err := h.Store.View(ctx, func(tx state.Tx) error {
		var err error
		if page.Spore, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		head, err := tx.Head(ctx, id)
		if err != nil {
			return err
		}
		page.Total = head.LastSeq
		if p.budget {
			if page.Over, err = outbox.OverBudgetNow(ctx, tx, page.Spore, h.now()); err != nil {
				return err
			}
			settings, err := tx.Settings(ctx)
			if err != nil {
				return err
			}
			page.Spend, page.Budget = policy.SpendOf(page.Spore, settings, h.now(), state.Spend{}), page.Spore.Budget
			// The agent's own account, beside the count, when there is
			// anything to compare.
			if r := policy.ReportedSpend(page.Spore, h.now(), state.Spend{}); settings.Gateway() &&
				(!page.Budget.IsZero() || r != (state.Spend{}) || page.Spend != (state.Spend{})) {
				page.Reported = &r
			}
		}
		end := head.LastSeq // the page's last seq
		if p.before > 0 && p.before-1 < end {
			end = p.before - 1
		}
		if end == 0 {
			return nil
		}
		after := uint64(0)
		if end > uint64(p.limit) {
			after = end - uint64(p.limit)
		}
		evs, err = tx.Events(ctx, id, after, int(end-after))
		return err
	})
	if err != nil {
		return page, err
	}
	page.Title = page.Spore.ID
	page.Activity = activityOf(page.Spore, h.now())
	for _, ev := range evs {
		page.Lines = appendViews(page.Lines, ev)
	}
	if len(evs) > 0 {
		page.First, page.Last = evs[0].Seq, evs[len(evs)-1].Seq
	}
	if page.First > 1 {
		page.Older = pageHref(id, page.First, p.limit)
	}
	if page.Last < page.Total {
		page.Newer = pageHref(id, page.Last+1+uint64(p.limit), p.limit)
		page.Newest = page.Href
		if p.limit != DefaultLimit {
			page.Newest += "?limit=" + strconv.Itoa(p.limit)
		}
	} else {
		page.Live = true
		page.EventsURL = page.Href + "/events?after=" + strconv.FormatUint(page.Total, 10)
	}
	return page, nil
}

func pageHref(id string, before uint64, limit int) string {
	s := sporeHref(id) + "?before=" + strconv.FormatUint(before, 10)
	if limit != DefaultLimit {
		s += "&limit=" + strconv.Itoa(limit)
	}
	return s
}

// lineView is one line of the conversation as line.html renders it, on
// the page and in a live tail alike.
type lineView struct {
	Seq    uint64
	Class  string
	Marker string
	From   string
	Text   string // shown as text, line breaks kept (when HTML is empty)
	// HTML is the agent's text rendered as markdown (markdown.go), the
	// only markup made of what the store holds; Inline says it is one
	// paragraph with no element of its own.
	HTML   template.HTML
	Inline bool
}

func viewOf(l transcript.Line) lineView {
	v := lineView{Seq: l.Seq, Class: lineClass(l), Marker: marker(l), From: l.From, Text: l.Text}
	if l.Kind == transcript.KindText {
		v.HTML, v.Inline = markdownHTML(l.Text)
	}
	return v
}

// appendViews appends the display lines of one event.
func appendViews(dst []lineView, ev state.Event) []lineView {
	for _, l := range transcript.Lines(ev) {
		dst = append(dst, viewOf(l))
	}
	return dst
}
