package pgstore

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The activity column holds a spore's hours compactly, as a JSON array of
// arrays of six integers — [unix seconds of the hour, turns, tool calls,
// input tokens, output tokens, cost in micros] — and, since schema 10, a
// seventh, the bytes stored (written only when not 0) — rather than as the
// objects the directory store keeps: every pass loads every spore's
// record, and decoding RFC 3339 objects was most of a PostgreSQL pass's
// time once spores had a week of activity (docs/postgres.md).

// encodeActivity is hs in the column's form; nil (NULL) when empty.
func encodeActivity(hs []state.HourActivity) any {
	if len(hs) == 0 {
		return nil
	}
	b := make([]byte, 0, 2+len(hs)*48)
	b = append(b, '[')
	for i, h := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		vs := []int64{h.Hour.Unix(), h.Turns, h.ToolCalls, h.InputTokens, h.OutputTokens, h.CostMicros, h.StoredBytes}
		if h.StoredBytes == 0 {
			vs = vs[:6]
		}
		for j, v := range vs {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

var errActivity = errors.New("not an array of [hour, turns, tool calls, input tokens, output tokens, cost(, stored bytes)] arrays")

// decodeActivity reads the column's form. It accepts exactly what
// encodeActivity writes, give or take whitespace; anything else is an
// error (the row is reported corrupt, never guessed at).
func decodeActivity(b []byte) ([]state.HourActivity, error) {
	p := actParser{b: b}
	if !p.eat('[') {
		return nil, errActivity
	}
	var hs []state.HourActivity
	if p.eat(']') {
		return hs, p.end()
	}
	for {
		var v [7]int64
		if !p.eat('[') {
			return nil, errActivity
		}
		for j := range v {
			if j == 6 && p.eat(']') {
				break // six: no bytes stored
			}
			if j > 0 && !p.eat(',') {
				return nil, errActivity
			}
			n, ok := p.int()
			if !ok {
				return nil, errActivity
			}
			v[j] = n
			if j == 6 && !p.eat(']') {
				return nil, errActivity
			}
		}
		if len(hs) == state.MaxActivity {
			return nil, fmt.Errorf("more than %d hours", state.MaxActivity)
		}
		hs = append(hs, state.HourActivity{Hour: time.Unix(v[0], 0).UTC(), Turns: v[1], ToolCalls: v[2],
			InputTokens: v[3], OutputTokens: v[4], CostMicros: v[5], StoredBytes: v[6]})
		if p.eat(']') {
			return hs, p.end()
		}
		if !p.eat(',') {
			return nil, errActivity
		}
	}
}

type actParser struct {
	b []byte
	i int
}

func (p *actParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *actParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *actParser) int() (int64, bool) {
	p.space()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var n uint64
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
		p.i++
	}
	switch {
	case p.i == start:
		return 0, false
	case neg && n <= 1<<63:
		return -int64(n-1) - 1, true
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

func (p *actParser) end() error {
	p.space()
	if p.i != len(p.b) {
		return errActivity
	}
	return nil
}
