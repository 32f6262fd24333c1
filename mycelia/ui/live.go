package ui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// liveLine is one display line as a live tail sends it. HTML is the <li>
// that line.html renders for it, which the page's script inserts as it
// is; the other fields say the same as data, for a reader that is not
// the page (they are never made into markup).
type liveLine struct {
	Seq    uint64 `json:"seq"`
	At     string `json:"at"`
	Kind   string `json:"kind"`
	Class  string `json:"class"`
	Marker string `json:"marker"`
	From   string `json:"from,omitempty"`
	Text   string `json:"text"`
	Error  bool   `json:"error,omitempty"`
	HTML   string `json:"html"`
}

// events is GET /ui/spores/{id}/events?after=SEQ: Server-Sent Events with
// every event of the log after SEQ (or the Last-Event-ID a reconnecting
// browser sends). Each SSE event is named "lines", has the store's seq as
// its id and as its data a JSON array of the event's display lines
// (liveLine), each with the <li> the page itself would have rendered for
// it (line.html: markdown and escaping are the server's, never the
// script's). When more than MaxBacklog events are behind, a "skipped"
// event says how many were left out. A spore deleted while followed ends
// the stream with a "gone" event.
//
// A stream reads the store when the Handler's hub (watch.go) says the
// spore's log may have grown, and every SafetyPoll besides; when the store
// cannot say (no Changes), every DefaultPoll. Handler.Poll overrides
// either period.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if state.ValidateID(id) != nil {
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	}
	after, err := parseAfter(r)
	if err != nil {
		h.error(w, r, http.StatusBadRequest, err.Error())
		return
	}
	var head state.SporeHead
	head, err = state.ViewValue(ctx, h.Store, func(tx state.Tx) (state.SporeHead, error) { return tx.Head(ctx, id) })
	if errors.Is(err, state.ErrNotFound) {
		h.error(w, r, http.StatusNotFound, "no such spore")
		return
	}
	if err != nil {
		h.internal(w, r, err)
		return
	}
	st, done := h.startStream(w, r, "live tails")
	if st == nil {
		return
	}
	defer done()
	bw, flush := st.Writer, st.flush

	// Take in what the spore's bridge writes while it is watched
	// (follow.go), and subscribe before the first read, so growth after
	// it is not missed.
	defer h.follow(id)()
	var wake <-chan struct{}
	poll := DefaultPoll
	if hb := h.hub(); hb != nil {
		sub, cancel := hb.subscribe(id)
		defer cancel()
		wake, poll = sub.Wake, SafetyPoll
	}
	if h.Poll > 0 {
		poll = h.Poll
	}
	fmt.Fprintf(bw, "retry: %d\n\n", min(2*poll, 2*time.Second).Milliseconds())
	if head.LastSeq > after+MaxBacklog {
		fmt.Fprintf(bw, "event: skipped\ndata: %d\n\n", head.LastSeq-MaxBacklog-after)
		after = head.LastSeq - MaxBacklog
	}
	if !flush() {
		return
	}
	var stop <-chan struct{}
	if h.Shutdown != nil {
		stop = h.Shutdown.Done()
	}
	tick := time.NewTicker(min(poll, heartbeat))
	defer tick.Stop()
	quiet := time.Now()
	for {
		if st.ended() {
			return
		}
		evs, err := state.ViewValue(ctx, h.Store, func(tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, id, after, PollBatch) })
		switch {
		case errors.Is(err, state.ErrNotFound):
			fmt.Fprint(bw, "event: gone\ndata: the spore was deleted\n\n")
			flush()
			return
		case err != nil && ctx.Err() == nil:
			h.logger().Warn("ui: live tail read failed", "spore", id, "err", err)
		}
		for _, ev := range evs {
			if err := writeEvent(bw, ev); err != nil {
				h.logger().Error("ui: encode event", "spore", id, "seq", ev.Seq, "err", err)
			}
			after = ev.Seq
		}
		if len(evs) > 0 {
			quiet = time.Now()
			if !flush() {
				return
			}
		} else if time.Since(quiet) >= heartbeat {
			quiet = time.Now()
			fmt.Fprint(bw, ": keep-alive\n\n")
			if !flush() {
				return
			}
		}
		if len(evs) == PollBatch {
			continue // more behind: read on at once
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// parseAfter reads ?after=SEQ, else the Last-Event-ID header a browser
// sends when it reconnects (which wins: it is where the page got to).
func parseAfter(r *http.Request) (uint64, error) {
	q := r.URL.Query()
	for k, vs := range q {
		if k != "after" {
			return 0, fmt.Errorf("unknown parameter %q: the live tail takes after=SEQ", k)
		}
		if len(vs) != 1 {
			return 0, errors.New("give after once")
		}
	}
	var after uint64
	if v, ok := q["after"]; ok {
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid after=%q: a sequence number, 0 or more", v[0])
		}
		after = n
	}
	if ids := r.Header.Values("Last-Event-ID"); len(ids) > 0 {
		n, err := strconv.ParseUint(ids[0], 10, 64)
		if len(ids) != 1 || err != nil {
			return 0, errors.New("invalid Last-Event-ID: a sequence number")
		}
		after = n
	}
	return after, nil
}

// writeEvent sends one event's lines, each with its <li> from line.html.
func writeEvent(w *bufio.Writer, ev state.Event) error {
	ls := transcript.Lines(ev)
	out := make([]liveLine, 0, len(ls))
	var sb strings.Builder
	for _, l := range ls {
		sb.Reset()
		if err := pages().ExecuteTemplate(&sb, "line", viewOf(l)); err != nil {
			return fmt.Errorf("render line of event %d: %w", ev.Seq, err)
		}
		out = append(out, liveLine{
			Seq: l.Seq, At: l.At.UTC().Format(time.RFC3339), Kind: string(l.Kind), Class: lineClass(l),
			Marker: marker(l), From: l.From, Text: l.Text, Error: l.Error, HTML: sb.String(),
		})
	}
	b, err := json.Marshal(out) // escapes <, > and & as \u003c…
	if err != nil {
		return err
	}
	// One data line: JSON has no raw newline.
	fmt.Fprintf(w, "id: %d\nevent: lines\ndata: %s\n\n", ev.Seq, b)
	return nil
}
