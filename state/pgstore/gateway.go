package pgstore

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The model_usage and model_calls columns (schema 13) hold the gateway's
// record of a spore (state.GatewayRecord) compactly, as activity is
// (activity.go), for the same reason: every pass loads every record, and
// a spore that calls the model often carries a week of hours and 64
// calls. An hour is [unix seconds of the hour, calls, input tokens,
// output tokens, cache creation tokens, cache read tokens, cost micros];
// a call is ["message id", unix seconds of its hour, the same five
// counts].

var (
	errModelUsage = errors.New("not an array of [hour, calls, input, output, cache creation, cache read, cost] arrays")
	errModelCalls = errors.New(`not an array of ["id", hour, input, output, cache creation, cache read, cost] arrays`)
)

// scanGateway reads the two columns into r; nil is NULL, none.
func scanGateway(r *state.GatewayRecord, usage, calls []byte) error {
	var err error
	if usage != nil {
		if r.ModelUsage, err = decodeModelUsage(usage); err != nil {
			return fmt.Errorf("model_usage: %w", err)
		}
	}
	if calls != nil {
		if r.ModelCalls, err = decodeModelCalls(calls); err != nil {
			return fmt.Errorf("model_calls: %w", err)
		}
	}
	return nil
}

// usageInts are u's counts in the columns' order.
func usageInts(u state.Usage) [5]int64 {
	return [5]int64{u.InputTokens, u.OutputTokens, u.CacheCreationTokens, u.CacheReadTokens, u.CostMicros}
}

func usageOf(v []int64) state.Usage {
	return state.Usage{InputTokens: v[0], OutputTokens: v[1], CacheCreationTokens: v[2], CacheReadTokens: v[3], CostMicros: v[4]}
}

func appendInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = append(b, ',')
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}

// encodeModelUsage is hs in the column's form; nil (NULL) when empty.
func encodeModelUsage(hs []state.HourUsage) any {
	if len(hs) == 0 {
		return nil
	}
	b := make([]byte, 0, 2+len(hs)*64)
	b = append(b, '[')
	for i, h := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, h.Hour.Unix(), 10)
		u := usageInts(h.Usage)
		b = appendInts(appendInts(b, h.Calls), u[:]...)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// encodeModelCalls is cs in the column's form; nil (NULL) when empty. A
// call id is printable ASCII (state's grammar), so a quote and a
// backslash are all it escapes.
func encodeModelCalls(cs []state.CountedCall) any {
	if len(cs) == 0 {
		return nil
	}
	b := make([]byte, 0, 2+len(cs)*96)
	b = append(b, '[')
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[', '"')
		for j := 0; j < len(c.ID); j++ {
			if c.ID[j] == '"' || c.ID[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, c.ID[j])
		}
		b = append(b, '"')
		u := usageInts(c.Usage)
		b = appendInts(appendInts(b, c.Hour.Unix()), u[:]...)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// decodeModelUsage reads model_usage's form: exactly what
// encodeModelUsage writes, give or take whitespace; anything else is an
// error (the row is reported corrupt, never guessed at). It stops past
// state.MaxActivity hours, so a damaged value cannot make a read hold
// more.
func decodeModelUsage(b []byte) ([]state.HourUsage, error) {
	var hs []state.HourUsage
	err := decodeRows(b, errModelUsage, state.MaxActivity, "hours", func(p *actParser) bool {
		var v [7]int64
		if !p.ints(v[:]) {
			return false
		}
		hs = append(hs, state.HourUsage{Hour: time.Unix(v[0], 0).UTC(), Calls: v[1], Usage: usageOf(v[2:])})
		return true
	})
	return hs, err
}

// decodeModelCalls reads model_calls' form, as decodeModelUsage reads
// its column's, stopping past state.MaxCountedCalls calls.
func decodeModelCalls(b []byte) ([]state.CountedCall, error) {
	var cs []state.CountedCall
	err := decodeRows(b, errModelCalls, state.MaxCountedCalls, "calls", func(p *actParser) bool {
		id, ok := p.str(state.MaxCallID)
		if !ok || !p.eat(',') {
			return false
		}
		var v [6]int64
		if !p.ints(v[:]) {
			return false
		}
		cs = append(cs, state.CountedCall{ID: id, Hour: time.Unix(v[0], 0).UTC(), Usage: usageOf(v[1:])})
		return true
	})
	return cs, err
}

// decodeRows reads "[" then arrays of one row each, by row, then "]":
// at most limit of them.
func decodeRows(b []byte, bad error, limit int, what string, row func(*actParser) bool) error {
	p := actParser{b: b}
	if !p.eat('[') {
		return bad
	}
	if p.eat(']') {
		return p.endOr(bad)
	}
	for n := 0; ; n++ {
		if n == limit {
			return fmt.Errorf("more than %d %s", limit, what)
		}
		if !p.eat('[') || !row(&p) || !p.eat(']') {
			return bad
		}
		if p.eat(']') {
			return p.endOr(bad)
		}
		if !p.eat(',') {
			return bad
		}
	}
}

// ints reads len(v) integers separated by commas.
func (p *actParser) ints(v []int64) bool {
	for j := range v {
		if j > 0 && !p.eat(',') {
			return false
		}
		n, ok := p.int()
		if !ok {
			return false
		}
		v[j] = n
	}
	return true
}

// str reads a JSON string as encodeModelCalls writes one: printable
// ASCII, a quote and a backslash escaped by a backslash, at most max
// bytes unescaped. Anything else (another escape, a control or non-ASCII
// byte) is not this column's.
func (p *actParser) str(max int) (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	var s []byte
	for p.i < len(p.b) {
		c := p.b[p.i]
		p.i++
		switch {
		case c == '"':
			return string(s), true
		case c == '\\':
			if p.i == len(p.b) || (p.b[p.i] != '"' && p.b[p.i] != '\\') {
				return "", false
			}
			c = p.b[p.i]
			p.i++
		case c < ' ' || c >= 0x7f:
			return "", false
		}
		if len(s) == max {
			return "", false
		}
		s = append(s, c)
	}
	return "", false
}

// endOr is bad unless nothing but whitespace is left.
func (p *actParser) endOr(bad error) error {
	p.space()
	if p.i != len(p.b) {
		return bad
	}
	return nil
}
