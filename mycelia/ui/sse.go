package ui

import (
	"bufio"
	"fmt"
	"net/http"
	"time"
)

// sseStream is one Server-Sent Events answer (a spore's live tail, the
// fleet's stream): counted against MaxStreams, written through a buffer
// that each flush pushes out under a fresh write deadline, and able to
// say when its session no longer holds.
type sseStream struct {
	*bufio.Writer
	h       *Handler
	r       *http.Request
	rc      *http.ResponseController
	checked time.Time
}

// startStream begins an SSE answer. When MaxStreams are open already it
// answers 503 with Retry-After instead and returns nil. The caller must
// call done when the stream ends.
func (h *Handler) startStream(w http.ResponseWriter, r *http.Request, what string) (s *sseStream, done func()) {
	max := h.MaxStreams
	if max <= 0 {
		max = DefaultMaxStreams
	}
	if h.streams.Add(1) > int64(max) {
		h.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		h.error(w, r, http.StatusServiceUnavailable, "too many "+what+" at once; try again later")
		return nil, nil
	}
	rc := http.NewResponseController(w)
	// serve's ReadTimeout would end the stream (the server's read of the
	// idle connection fails and cancels the request): a stream reads
	// nothing more, so it lifts the read deadline, and each write extends
	// the write deadline.
	_ = rc.SetReadDeadline(time.Time{})
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s = &sseStream{Writer: bufio.NewWriter(w), h: h, r: r, rc: rc, checked: time.Now()}
	return s, func() { h.streams.Add(-1) }
}

// flush sends what was written; false when the browser is gone.
func (s *sseStream) flush() bool {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeWindow))
	if s.Writer.Flush() != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// ended reports whether the stream must end because its session no
// longer holds (a revoked token, an expired session: stillAllowed),
// checked at most once every recheck; it then says so to the browser.
// Access is otherwise checked when a request starts, and a stream lasts
// as long as the browser keeps it open.
func (s *sseStream) ended() bool {
	if time.Since(s.checked) < recheck {
		return false
	}
	s.checked = time.Now()
	if s.h.stillAllowed(s.r) {
		return false
	}
	fmt.Fprint(s, "event: ended\ndata: log in again\n\n")
	s.flush()
	return true
}
