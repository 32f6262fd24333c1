package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The bridge runs inside the spore, beside an agent that runs arbitrary
// code: the agent can replace it and answer on its port. So everything a
// bridge answers is checked against the contract here (docs/bridge.md
// "An untrusted answer"), and an answer that breaks it is a BreachError,
// never a reason to read or keep more.

// BreachError is an answer that breaks the bridge's contract: too long,
// not the contract's JSON, a page with more lines than asked, numbers
// that go back. The pass makes that spore Suspect (ContractBreach) and
// goes on with the others.
type BreachError struct {
	Route string // "GET /v1/events"
	What  string // what was wrong, in words; never the offending text itself
}

func (e *BreachError) Error() string {
	return fmt.Sprintf("bridge %s broke the contract: %s", e.Route, e.What)
}

// capReader reads at most limit bytes of r and notes whether r held more.
type capReader struct {
	r     io.Reader
	limit int64
	read  int64
	over  bool
}

// errOverCap ends a read that would pass the cap.
var errOverCap = errors.New("answer over its size bound")

func (c *capReader) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over = true
			return 0, errOverCap
		}
		return 0, err
	}
	if left := c.limit - c.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// decodeBounded decodes one JSON value of at most limit bytes from r into
// out. A longer answer, or one that is not JSON of out's shape, is a
// BreachError; a transport failure (the connection cut) is returned as
// it is.
func decodeBounded(r io.Reader, limit int64, route string, out any) error {
	cr := &capReader{r: r, limit: limit}
	err := json.NewDecoder(cr).Decode(out)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case cr.over:
		return &BreachError{Route: route, What: fmt.Sprintf("an answer longer than %d bytes", limit)}
	case errors.As(err, &syn):
		return &BreachError{Route: route, What: fmt.Sprintf("an answer that is not JSON (at byte %d: %s)", syn.Offset, syn.Error())}
	case errors.As(err, &typ):
		return &BreachError{Route: route, What: fmt.Sprintf("an answer whose field %q is not a %s", typ.Field, typ.Type)}
	case err != nil:
		return err
	}
	return nil
}

// CheckPage checks a page of events asked for with after and limit (0:
// DefaultLimit) against the contract: at most limit events, each line at
// most MaxLineBytes and present (the client's decoding checked it is
// JSON), all lines together at most
// MaxPageLineBytes plus one line, numbers after after and rising, and a
// last_seq no lower than the last event's. Numbers that skip are not a
// breach of the page (the pass tells a gap apart: IngestGap).
func CheckPage(page Events, after uint64, limit int) error {
	const route = "GET /v1/events"
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if len(page.Events) > limit {
		return &BreachError{Route: route, What: fmt.Sprintf("%d events where at most %d were asked for", len(page.Events), limit)}
	}
	prev, total := after, 0
	for _, ev := range page.Events {
		if ev.Seq <= prev {
			return &BreachError{Route: route, What: fmt.Sprintf("line %d after line %d: numbers must rise past %d", ev.Seq, prev, after)}
		}
		if len(ev.Line) > MaxLineBytes {
			return &BreachError{Route: route, What: fmt.Sprintf("line %d is %d bytes, over the %d-byte bound of a line", ev.Seq, len(ev.Line), MaxLineBytes)}
		}
		if len(ev.Line) == 0 {
			// That a line is JSON the client's decoding checked (into a
			// json.RawMessage); an absent one is no line.
			return &BreachError{Route: route, What: fmt.Sprintf("line %d is not JSON", ev.Seq)}
		}
		total += len(ev.Line)
		prev = ev.Seq
	}
	if total > MaxPageLineBytes+MaxLineBytes {
		return &BreachError{Route: route, What: fmt.Sprintf("a page of %d bytes of lines, over the %d-byte bound of a page", total, MaxPageLineBytes+MaxLineBytes)}
	}
	if n := len(page.Events); n > 0 && page.LastSeq < page.Events[n-1].Seq {
		return &BreachError{Route: route, What: fmt.Sprintf("last_seq %d below its own line %d", page.LastSeq, page.Events[n-1].Seq)}
	}
	return nil
}

// CheckStatus checks a status against the contract: its state one of
// the five. Its texts are cut to MaxStatusText bytes by the caller that
// keeps them (a longer session id is no harm, only noise).
func CheckStatus(s Status) error {
	if !s.State.Known() {
		return &BreachError{Route: "GET /v1/status", What: fmt.Sprintf("state of %d bytes that is none of starting, idle, working, blocked, backoff", len(s.State))}
	}
	return nil
}
