package fakeapi

import (
	"slices"
	"time"
)

// Answer is the fake's own account of one message it answered: what a
// test compares with what a gateway in front of it counted. Only answers
// that are messages are kept (not scripted errors, not count_tokens).
type Answer struct {
	// ID is the message id it sent (message_start's, or the whole
	// answer's).
	ID string
	// Prompt and Step are the request's newest prompt and its step of the
	// scripted conversation (Request.Prompt).
	Prompt string
	Step   int
	Stream bool
	// Usage is what the whole answer says it used.
	Usage Usage
	// APIKey is the x-api-key the request came with: whoever called the
	// fake held it.
	APIKey string
	// Started is when message_start (or the whole answer) was written and
	// flushed without error; zero when it never was.
	Started time.Time
	// Delta is when message_delta, which carries the final output usage,
	// was written and flushed without error: the stream reached its end.
	// For a whole answer, Started.
	Delta time.Time
	// Ended is when the fake stopped answering, whether the answer was
	// written whole or its client went away.
	Ended time.Time
}

// Whole reports whether the answer was written to its end.
func (a Answer) Whole() bool { return !a.Delta.IsZero() }

// Answered returns a copy of every message answer so far, in the order
// they began.
func (s *Server) Answered() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Answer, 0, len(s.answers))
	for _, a := range s.answers {
		out = append(out, *a)
	}
	return out
}

// InFlight returns the answers begun and not yet ended.
func (s *Server) InFlight() []Answer {
	return slices.DeleteFunc(s.Answered(), func(a Answer) bool { return !a.Ended.IsZero() })
}

// answer records one message answer as it is written.
type answer struct {
	s *Server
	a *Answer
}

func (s *Server) begin(a Answer) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &a
	s.answers = append(s.answers, rec)
	return answer{s: s, a: rec}
}

func (w answer) set(fn func(a *Answer)) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	fn(w.a)
}

func (w answer) started() { w.set(func(a *Answer) { a.Started = time.Now() }) }
func (w answer) delta()   { w.set(func(a *Answer) { a.Delta = time.Now() }) }
func (w answer) ended()   { w.set(func(a *Answer) { a.Ended = time.Now() }) }
