package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Model is the model name the fake reports when a request names none.
const Model = "claude-fake-1"

// Server is the fake Messages API. The zero value is not usable; use New.
type Server struct {
	mu       sync.Mutex
	rules    []Rule
	fallback Reply
	requests []Request
	answers  []*Answer
	msgID    int
}

// New returns a fake answering every prompt with fallback text "ok" until
// rules are added.
func New() *Server {
	return &Server{fallback: Text("ok")}
}

// Start serves s on a local httptest server; the caller closes it.
func (s *Server) Start() *httptest.Server {
	return httptest.NewServer(s)
}

// Script adds rules; a later rule whose Match also fits wins over an
// earlier one, so a test can override a default.
func (s *Server) Script(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rules...)
}

// Requests returns a copy of the conversation requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// LastRequestFor is the newest request whose prompt (its last user
// text) contains s: the turn a test is waiting on or checking.
func (s *Server) LastRequestFor(sub string) (Request, bool) {
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if p, _ := reqs[i].Prompt(); strings.Contains(p, sub) {
			return reqs[i], true
		}
	}
	return Request{}, false
}

// ServeHTTP answers the Messages API routes Claude Code uses.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		s.messages(w, r)
	default:
		writeJSON(w, http.StatusNotFound, apiError("not_found_error", "no route "+r.URL.Path))
	}
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", err.Error()))
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", err.Error()))
		return
	}
	reply, id := s.choose(req)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 {
		typ := reply.ErrorType
		if typ == "" {
			typ = "api_error"
		}
		writeJSON(w, reply.Status, apiError(typ, "scripted failure"))
		return
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	prompt, step := req.Prompt()
	rec := s.begin(Answer{ID: id, Prompt: prompt, Step: step, Stream: req.Stream, Usage: reply.usage(), APIKey: r.Header.Get("x-api-key")})
	defer rec.ended()
	if !req.Stream {
		writeJSON(w, http.StatusOK, message(id, model, reply))
		if http.NewResponseController(w).Flush() == nil {
			rec.started()
			rec.delta()
		}
		return
	}
	stream(r.Context(), w, id, model, reply, rec)
}

// choose picks the reply for req and records the request.
func (s *Server) choose(req Request) (Reply, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	s.msgID++
	id := fmt.Sprintf("msg_fake_%06d", s.msgID)
	prompt, step := req.Prompt()
	for i := len(s.rules) - 1; i >= 0; i-- {
		rule := s.rules[i]
		if !strings.Contains(prompt, rule.Match) {
			continue
		}
		if step < len(rule.Steps) {
			return rule.Steps[step], id
		}
		return Text("done"), id
	}
	return s.fallback, id
}

func apiError(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
