package ui

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/internal/share"
)

// DefaultFleetEvery is how often the fleet's live stream re-reads the
// fleet: one read-only pass and one read of every spore's record and
// tail, shared by every stream of the process (fleetShared).
const DefaultFleetEvery = 5 * time.Second

// DefaultFleetShare is how long one fleet read (its read-only pass)
// serves the fleet page loads that come after it.
const DefaultFleetShare = time.Second

// fleetShared is the last fleet read, kept so that page loads within
// FleetShare of it, and the live streams within their interval, share
// one pass rather than each running one; requests that come while a read
// runs wait for it (internal/share's rule). It holds a copy of what the
// store said, nothing per operator or session (pages add those when they
// render), never state of its own: it is dropped and read again.
type fleetShared struct {
	// every is the streams' interval (DefaultFleetEvery when 0; tests
	// shorten it).
	every time.Duration

	read share.Value[*fleetData]
}

func (s *fleetShared) interval() time.Duration {
	if s.every > 0 {
		return s.every
	}
	return DefaultFleetEvery
}

func (h *Handler) fleetShare() time.Duration {
	if h.FleetShare != 0 {
		return max(h.FleetShare, 0)
	}
	return DefaultFleetShare
}

func (h *Handler) fleetRows() int {
	if h.FleetRows > 0 {
		return h.FleetRows
	}
	return DefaultFleetRows
}

// sharedFleet returns the fleet read running now, else the last one
// while it is younger than maxAge, else a new one (share.Value.Get).
func (h *Handler) sharedFleet(ctx context.Context, maxAge time.Duration) (*fleetData, error) {
	return h.fleetLive.read.Get(ctx, maxAge, h.buildFleet)
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
		d, err := h.sharedFleet(ctx, every)
		switch {
		case err != nil && ctx.Err() == nil:
			h.logger().Warn("ui: fleet stream read failed", "err", err)
		case err == nil:
			if frag, err := h.fragment(ctx, d, f); err != nil {
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
func (h *Handler) fragment(ctx context.Context, d *fleetData, f fleetFilter) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if frag, ok := d.frags[f]; ok {
		return frag, nil
	}
	p, err := h.fleetPageOf(ctx, d, f, "", h.fleetRows())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := pages().ExecuteTemplate(&b, "fleetbody", p); err != nil {
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
