package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sporectl/sporectl/bridge/streamjson"
	"github.com/sporectl/sporectl/state"
)

// Activity counting (docs/page.md "Activity counting"): the commit that
// appends a spore's ingested lines also adds them to the spore's hourly
// activity (state.Spore.Activity), so the page's graph and "today"
// figures read one record and never the log. Pure: the lines and now in,
// the new hours out.
//
// What counts, per agent line (Claude Code's stream-json):
//   - a turn per `result` line, whatever its subtype (an error ends a
//     turn too);
//   - a tool call per tool_use (or server_tool_use) block of an
//     assistant line;
//   - tokens and cost from `result` lines only, which carry the turn's
//     whole usage: input tokens are usage.input_tokens plus
//     usage.cache_creation_input_tokens (what the model read afresh);
//     cache reads are left out, since every API call of a turn re-reads
//     the same cached context and counting it would count the
//     conversation again at each call (its price is in the cost);
//     output tokens are usage.output_tokens; the cost is total_cost_usd
//     (the bridge runs one `claude -p` per turn, so it is that turn's),
//     kept in micro-dollars, rounded.
//
// A line that does not parse as such (a malformed result, a plain
// string) counts as nothing; it never fails the ingest. Negative figures
// count as zero and sums saturate, so no line can make the record
// invalid.
//
// Every agent line also counts its bytes as stored (the ingest quota's
// measure, docs/bridge.md).
//
// The line is the agent's word (its bridge is its own): a result line
// claiming more than one turn can spend (maxLineTokens of input or of
// output, maxLineCostMicros) counts its turn but none of its usage, and
// ingest records it as a contract breach. And every line counts in the
// hour of the pass that ingests it, not the hour its bridge stamped: a
// line stamped yesterday is today's spend.

// Bounds of the usage one result line may claim. A line is one turn (one
// `claude -p` run): however many model calls it makes, each reads at
// most a context window (1M tokens at most) afresh and writes at most a
// few tens of thousands; 20M tokens either way is a hundred full-context
// calls, beyond any real turn, and $2,000 is beyond what they cost at
// list prices. A forged 9e18 is refused, a real turn never.
const (
	maxLineTokens     = 20_000_000
	maxLineCostMicros = 2_000 * 1_000_000
)

// lineCounts is what one line adds to its hour.
type lineCounts struct {
	turns, tools, in, out, cost int64
	bytes                       int64 // the line's, as stored
	// forged says, in words, which usage claim of the line passed its
	// bound ("" when none); its usage is then not counted.
	forged string
}

func (c lineCounts) zero() bool { return c == lineCounts{} }

// Substrings a counted line must hold; checked before decoding, so
// text, thinking and tool result lines (most of a conversation) cost a
// scan, not a decode.
var (
	markToolUse = []byte(`tool_use"`) // "tool_use" and "server_tool_use", not "tool_use_id"
	markResult  = []byte(`"result"`)
)

// countedLine is what countLine decodes of a line: the few fields that
// count (a decode that skips the rest, tool inputs included, costs a
// fraction of reading the whole line as streamjson.Parse does).
type countedLine struct {
	Type    string `json:"type"`
	Message struct {
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	} `json:"message"`
	TotalCostUSD float64          `json:"total_cost_usd"`
	Usage        streamjson.Usage `json:"usage"`
}

// countLine counts one agent line. A line that does not decode into
// those fields (malformed JSON, a string, a field of another type)
// counts as nothing.
func countLine(line json.RawMessage) lineCounts {
	c := lineCounts{bytes: int64(len(line))}
	if !bytes.Contains(line, markToolUse) && !bytes.Contains(line, markResult) {
		return c
	}
	var w countedLine
	if json.Unmarshal(line, &w) != nil {
		return c
	}
	switch w.Type {
	case "assistant":
		for _, b := range w.Message.Content {
			if b.Type == "tool_use" || b.Type == "server_tool_use" {
				c.tools++
			}
		}
	case "result":
		c.turns = 1
		c.in = state.AddCount(nonNeg(w.Usage.InputTokens), nonNeg(w.Usage.CacheCreationInputTokens))
		c.out = nonNeg(w.Usage.OutputTokens)
		c.cost = micros(w.TotalCostUSD)
		switch {
		case c.in > maxLineTokens:
			c.forged = fmt.Sprintf("claims %d input tokens, over the %d one turn can read", c.in, maxLineTokens)
		case c.out > maxLineTokens:
			c.forged = fmt.Sprintf("claims %d output tokens, over the %d one turn can write", c.out, maxLineTokens)
		case c.cost > maxLineCostMicros:
			c.forged = fmt.Sprintf("claims a cost of %s, over the %s one turn can cost", state.CostText(c.cost), state.CostText(maxLineCostMicros))
		}
		if c.forged != "" {
			c.in, c.out, c.cost = 0, 0, 0
		}
	}
	return c
}

// micros turns dollars into millionths of a dollar, rounded; nonsense
// (negative, not a number, beyond int64) counts as zero or the most.
func micros(usd float64) int64 {
	switch m := math.Round(usd * 1e6); {
	case !(m > 0): // negative, zero, NaN
		return 0
	case m >= math.MaxInt64:
		return math.MaxInt64
	default:
		return int64(m)
	}
}

func nonNeg(n int64) int64 { return max(n, 0) }

// activityWindow is the first hour kept at now: the record holds the
// MaxActivity hours up to and including now's.
func activityWindow(now time.Time) (first, last time.Time) {
	last = now.UTC().Truncate(time.Hour)
	return last.Add(-(state.MaxActivity - 1) * time.Hour), last
}

// addActivity adds the agent lines among evs to hs (ascending by hour),
// each counted by count (nil: countLine), and drops the hours before the
// window at now. Every line goes to now's UTC hour, the hour it is
// ingested in, whatever time its bridge gave it (the agent's word: a line
// stamped yesterday would escape today's budget). hs is never modified:
// when nothing changes it is returned as it is.
func addActivity(hs []state.HourActivity, evs []state.Event, now time.Time, count func(state.Event) lineCounts) []state.HourActivity {
	if count == nil {
		count = func(e state.Event) lineCounts { return countLine(e.Line) }
	}
	first, last := activityWindow(now)
	out := hs
	cloned := false
	own := func() {
		if !cloned {
			out, cloned = slices.Clone(out), true
		}
	}
	if i := slices.IndexFunc(out, func(h state.HourActivity) bool { return !h.Hour.Before(first) }); i != 0 {
		own()
		if i < 0 {
			out = out[:0]
		} else {
			out = slices.Delete(out, 0, i)
		}
	}
	for _, e := range evs {
		if e.Kind != state.KindAgent {
			continue
		}
		c := count(e)
		if c.zero() {
			continue
		}
		hour := last
		own()
		i, found := slices.BinarySearchFunc(out, hour, func(h state.HourActivity, t time.Time) int { return h.Hour.Compare(t) })
		if !found {
			out = slices.Insert(out, i, state.HourActivity{Hour: hour})
		}
		h := &out[i]
		h.Turns = state.AddCount(h.Turns, c.turns)
		h.ToolCalls = state.AddCount(h.ToolCalls, c.tools)
		h.InputTokens = state.AddCount(h.InputTokens, c.in)
		h.OutputTokens = state.AddCount(h.OutputTokens, c.out)
		h.CostMicros = state.AddCount(h.CostMicros, c.cost)
		h.StoredBytes = state.AddCount(h.StoredBytes, c.bytes)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
