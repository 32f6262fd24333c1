package ui

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultFleetEvery is how often the fleet's live stream re-reads the
// fleet: one read-only pass and one read of every spore's record and
// tail, shared by every stream of the process (fleetShared).
const DefaultFleetEvery = 5 * time.Second

// fleetShared is the last fleet read, kept for the live streams so that
// any number of watchers cost one pass per interval, not one each. It
// holds a copy of what the store said, never state of its own: it is
// dropped and read again every interval.
type fleetShared struct {
	// every is the interval (DefaultFleetEvery when 0; tests shorten it).
	every time.Duration

	mu   sync.Mutex
	last *fleetData
}

func (s *fleetShared) interval() time.Duration {
	if s.every > 0 {
		return s.every
	}
	return DefaultFleetEvery
}

// fleetNow reads the fleet afresh (a page load) and keeps it for the
// streams.
func (h *Handler) fleetNow(ctx context.Context) (*fleetData, error) {
	d, err := h.buildFleet(ctx)
	if err != nil {
		return nil, err
	}
	h.fleetLive.mu.Lock()
	h.fleetLive.last = d
	h.fleetLive.mu.Unlock()
	return d, nil
}

// sharedFleet returns the kept fleet when it is younger than the
// interval, else reads it again; streams that ask meanwhile wait for that
// one read.
func (h *Handler) sharedFleet(ctx context.Context) (*fleetData, error) {
	s := &h.fleetLive
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && time.Since(s.last.built) < s.interval() {
		return s.last, nil
	}
	d, err := h.buildFleet(ctx)
	if err != nil {
		return nil, err
	}
	s.last = d
	return d, nil
}

// fleetEvents is GET /ui/fleet/events?colony=&state=&q=: Server-Sent
// Events with the fleet page's rows (the strip, the filter's choices and
// every colony's table: template "fleetbody"), rendered by html/template
// like the page, sent at once and then whenever they change, checked
// every interval. Each SSE event is named "fleet"; its data lines are the
// fragment's lines. The page's script puts the fragment in place of the
// old one. Streams count against the same bound as the spore tails.
func (h *Handler) fleetEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f, err := parseFleetFilter(r.URL.Query())
	if err != nil {
		h.error(w, r, http.StatusBadRequest, err.Error())
		return
	}
	st, done := h.startStream(w, r, "live streams")
	if st == nil {
		return
	}
	defer done()
	bw, flush := st.Writer, st.flush

	every := h.fleetLive.interval()
	fmt.Fprintf(bw, "retry: %d\n\n", (2 * every).Milliseconds())
	if !flush() {
		return
	}
	var stop <-chan struct{}
	if h.Shutdown != nil {
		stop = h.Shutdown.Done()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	quiet := time.Now()
	var sent string
	for {
		if st.ended() {
			return
		}
		d, err := h.sharedFleet(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			h.logger().Warn("ui: fleet stream read failed", "err", err)
		case err == nil:
			if frag, err := d.fragment(f); err != nil {
				h.logger().Error("ui: render fleet rows", "err", err)
			} else if frag != sent {
				sent = frag
				writeFragment(bw, "fleet", frag)
				quiet = time.Now()
				if !flush() {
					return
				}
			}
		}
		if time.Since(quiet) >= heartbeat {
			quiet = time.Now()
			fmt.Fprint(bw, ": keep-alive\n\n")
			if !flush() {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// fragment is the rows of d under f, rendered once per filter for all the
// streams that share d.
func (d *fleetData) fragment(f fleetFilter) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if frag, ok := d.frags[f]; ok {
		return frag, nil
	}
	var b strings.Builder
	if err := pages().ExecuteTemplate(&b, "fleetbody", d.page(f, "")); err != nil {
		return "", err
	}
	if d.frags == nil {
		d.frags = map[fleetFilter]string{}
	}
	d.frags[f] = b.String()
	return b.String(), nil
}

// writeFragment sends markup as one SSE event, a data line per line. A
// carriage return would end a line for the browser's parser: it is sent
// as its character reference, which the markup reads the same.
func writeFragment(w *bufio.Writer, event, frag string) {
	frag = strings.ReplaceAll(strings.TrimSuffix(frag, "\n"), "\r", "&#13;")
	fmt.Fprintf(w, "event: %s\n", event)
	for _, l := range strings.Split(frag, "\n") {
		fmt.Fprintf(w, "data: %s\n", l)
	}
	fmt.Fprint(w, "\n")
}
