package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/strictjson"
)

// maxEventsBytes bounds the lines of one page of events (the contract's
// bound, which the client holds a page to).
const maxEventsBytes = bridge.MaxPageLineBytes

// maxIDBytes bounds prompt ids and senders.
const maxIDBytes = 256

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", method(http.MethodGet, s.healthz))
	mux.Handle("/readyz", method(http.MethodGet, s.readyz))
	mux.Handle("/v1/status", s.auth(method(http.MethodGet, s.status)))
	mux.Handle("/v1/prompts", s.auth(method(http.MethodPost, s.postPrompt)))
	mux.Handle("/v1/prompts/{id}", s.auth(method(http.MethodGet, s.getPrompt)))
	mux.Handle("/v1/events", s.auth(method(http.MethodGet, s.events)))
	mux.Handle("/v1/compact", s.auth(method(http.MethodPost, s.compact)))
	mux.Handle("/v1/interrupt", s.auth(method(http.MethodPost, s.interrupt)))
	mux.Handle("/v1/", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route %s", r.URL.Path)
	})))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route %s", r.URL.Path)
	})
	return s.guard(mux)
}

// guard runs before any route, on the request's headers alone:
//
//   - the request is marked as being served on its connection (see
//     connLimiter; auth marks it authenticated);
//   - the answer must be written within WriteTimeout;
//   - a request that declares a body gets BodyTimeout to send it, and is
//     answered with "Connection: close" unless auth lets it through: a
//     body that no handler reads is then never read at all (Go's server
//     would otherwise read up to 256 KiB of it, before answering and when
//     closing the request, for as long as the client takes), and the
//     connection is closed instead.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := connOf(r.Context()); c != nil {
			c.begin()
			defer c.end()
		}
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetWriteDeadline(now.Add(s.cfg.WriteTimeout))
		if r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		_ = rc.SetReadDeadline(now.Add(s.cfg.BodyTimeout))
		w.Header().Set("Connection", "close")
		h.ServeHTTP(w, r)
		if w.Header().Get("Connection") == "close" {
			// The connection closes: read nothing more of the body (the
			// server would still read up to 256 KiB of it when it closes
			// the request).
			_ = rc.SetReadDeadline(time.Unix(1, 0))
		}
	})
}

func method(m string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != m {
			w.Header().Set("Allow", m)
			writeError(w, http.StatusMethodNotAllowed, "%s needs %s", r.URL.Path, m)
			return
		}
		h(w, r)
	})
}

// auth checks the bearer token in constant time, from Authorization or
// from bridge.TokenHeader (for callers behind the API server's pod proxy).
// It decides on the headers alone: a request without the token is
// answered 401 before any of its body is read, and (guard) its connection
// is closed rather than its body read.
func (s *Server) auth(h http.Handler) http.Handler {
	want := []byte("Bearer " + s.cfg.Token)
	wantRaw := []byte(s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer := subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		header := subtle.ConstantTimeCompare([]byte(r.Header.Get(bridge.TokenHeader)), wantRaw) == 1
		if !bearer && !header {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sporectl-bridge"`)
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		if c := connOf(r.Context()); c != nil {
			c.trust()
		}
		// An authenticated body is read (within BodyTimeout), and the
		// connection may be kept.
		w.Header().Del("Connection")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	if !st.Healthy {
		writeError(w, http.StatusServiceUnavailable, "cannot append to the event log: %s", st.Error)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "state": st.State, "last_seq": st.LastSeq})
}

// readyz answers 200 whenever the bridge serves, whether or not it can
// append to its log: it is what a readiness probe asks, so a bridge on a
// full disk stays reachable and its /v1/status can say what ails it
// (healthy: false) — the pass then reports BridgeUnhealthy, not "not
// answering". /healthz keeps its 503 for monitoring.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	writeJSON(w, http.StatusOK, map[string]any{"ready": true, "healthy": st.Healthy})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Status())
}

func (s *Server) postPrompt(w http.ResponseWriter, r *http.Request) {
	var req bridge.PromptRequest
	if !decode(w, r, bridge.MaxPromptBytes*6+64<<10, &req) {
		return
	}
	switch {
	case req.ID == "" || len(req.ID) > maxIDBytes:
		writeError(w, http.StatusBadRequest, "prompt needs an id of 1 to %d bytes", maxIDBytes)
		return
	case req.From == "" || len(req.From) > maxIDBytes:
		writeError(w, http.StatusBadRequest, "prompt needs a sender (from) of 1 to %d bytes", maxIDBytes)
		return
	}
	// The one check every text passes on its way here (bridge.CheckText),
	// but for its control rule: every intake (prompt, serve, the page)
	// applies that before anything is queued, and the bridge is the last
	// hop of an outbox delivered in order, so refusing here a text queued
	// before the rule existed would hold its spore's later prompts forever.
	if e := bridge.CheckText(req.Text, bridge.MaxPromptBytes); e != nil && e.Problem != bridge.TextControl {
		if e.Problem == bridge.TextTooLarge {
			writeError(w, http.StatusRequestEntityTooLarge, "prompt text is %d bytes; the limit is %d", e.Len, e.Max)
			return
		}
		writeError(w, http.StatusBadRequest, "%s", e.Of("prompt text"))
		return
	}
	s.enqueue(w, Prompt{ID: req.ID, From: req.From, Text: req.Text, At: s.cfg.Now().UTC()})
}

func (s *Server) enqueue(w http.ResponseWriter, p Prompt) {
	pos, dup, err := s.queue.add(p)
	if err != nil {
		s.cfg.Logger.Error("queue prompt", "prompt", p.ID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	writeJSON(w, http.StatusAccepted, bridge.PromptAccepted{ID: p.ID, Position: pos, Duplicate: dup})
}

func (s *Server) getPrompt(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	info, ok := s.queue.lookup(id, running)
	if !ok {
		writeError(w, http.StatusNotFound, "unknown prompt id %q", id)
		return
	}
	writeJSON(w, http.StatusOK, bridge.PromptState{ID: id, State: info.State, Position: info.Position})
}

// compact queues /compact behind what is already queued, so it runs on
// the session between turns. An optional body {"id"} makes it idempotent.
func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if r.ContentLength != 0 && !decode(w, r, 64<<10, &req) {
		return
	}
	if len(req.ID) > maxIDBytes {
		writeError(w, http.StatusBadRequest, "id longer than %d bytes", maxIDBytes)
		return
	}
	if req.ID == "" {
		req.ID = "compact-" + newUUID()
	}
	s.enqueue(w, Prompt{ID: req.ID, From: "bridge:compact", Text: "/compact", At: s.cfg.Now().UTC()})
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request) {
	ok, err := s.Interrupt()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"interrupted": ok})
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := parseUint(q.Get("after"), 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "after: %v", err)
		return
	}
	limit, err := parseUint(q.Get("limit"), bridge.DefaultLimit)
	if err != nil || limit == 0 {
		writeError(w, http.StatusBadRequest, "limit: want 1 to %d", bridge.MaxLimit)
		return
	}
	limit = min(limit, bridge.MaxLimit)
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		wait, err = time.ParseDuration(v)
		if err != nil || wait < 0 {
			writeError(w, http.StatusBadRequest, "wait: want a duration such as 30s, got %q", v)
			return
		}
		wait = min(wait, bridge.MaxWait)
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + s.cfg.WriteTimeout))
	}
	if last := s.log.Last(); after > last {
		writeError(w, http.StatusConflict, "after %d is beyond the last line %d: this log is not the one you read", after, last)
		return
	}
	if wait > 0 {
		ctx, cancel := contextWithTimeout(r, wait)
		_, _ = s.log.Wait(ctx, after)
		cancel()
	}
	recs, last, err := s.log.Read(r.Context(), after, int(limit), maxEventsBytes)
	if err != nil {
		s.cfg.Logger.Error("read events", "after", after, "err", err)
		writeError(w, http.StatusInternalServerError, "read events: %v", err)
		return
	}
	page := bridge.Events{Events: make([]bridge.Event, len(recs)), LastSeq: last}
	for i, rec := range recs {
		page.Events[i] = bridge.Event{Seq: rec.Seq, At: rec.At, Line: rec.Line}
	}
	writeJSON(w, http.StatusOK, page)
}

func parseUint(v string, def uint64) (uint64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a whole number ≥ 0, got %q", v)
	}
	return n, nil
}

// decode reads a JSON body of at most limit bytes, within the read
// deadline guard set (BodyTimeout): a body that is not all there by then
// is answered 408. It decodes it strictly (package strictjson): one object
// of v's fields, no name twice or in another case, valid UTF-8 and no
// escape of a lone surrogate, nothing after it; else 400.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	// Read to its end (within the limit and the deadline), so the server
	// reads nothing more of it after the handler.
	b, err := io.ReadAll(r.Body)
	if err == nil {
		err = strictjson.Decode(b, v)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		var bad *strictjson.Error
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestTimeout, "request body not received in time")
		case errors.As(err, &bad):
			writeError(w, http.StatusBadRequest, "request body: %v", bad)
		default:
			writeError(w, http.StatusBadRequest, "request body could not be read")
		}
		return false
	}
	// The body is all read: lift its deadline, which would otherwise end
	// the request's context while the server waits for the next request.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// A line goes out as it is stored: escaping <, > and & would make it
	// longer than the contract's bound (bridge.MaxLineBytes).
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "?")
	}
	writeJSON(w, status, bridge.ErrorBody{Error: msg})
}

func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}
