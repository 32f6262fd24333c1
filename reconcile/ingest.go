package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
)

// DefaultIngestDeadline bounds a pass's ingest from every bridge at
// once; what is not fetched by then is fetched by the next pass.
const DefaultIngestDeadline = 10 * time.Second

// maxIngestPerSpore and maxIngestBytesPerSpore bound what one pass takes
// from one bridge, in lines and in bytes of lines, so a spore with a huge
// backlog (or a bridge that floods) cannot make one commit, or the pass's
// memory, unbounded; the rest waits in the bridge's log for the next
// pass (docs/bridge.md "An untrusted answer"). 2 MiB is two of the
// largest lines, and far more than a turn writes between two passes; a
// larger bound cost a flooded pass more than 1.5 times a calm one's peak
// (BenchmarkPassHostileBridge).
const (
	maxIngestPerSpore      = 50_000
	maxIngestBytesPerSpore = 2 << 20
)

// ingested is what a pass fetched from one bridge: agent events to append
// after the store's BridgeSeq base, and what was wrong with the numbers.
type ingested struct {
	base   uint64        // the spore's BridgeSeq the fetch started after
	events []state.Event // Kind agent, BridgeSeq base+1, base+2, …
	// counts[i] is what events[i] adds to the spore's activity, counted
	// as it was fetched (alongside the other bridges' waits, not inside
	// the commit's transaction).
	counts  []lineCounts
	bytes   int64  // of the lines of events
	problem Reason // IngestGap, BridgeLogLost, ContractBreach, IngestQuota, or ""
	detail  string // for the event that records the problem
	err     error  // a failed fetch (the bridge went away): nothing wrong with the numbers
}

// ingest fetches, from every spore whose bridge answered with lines the
// store does not have, the lines after the last saved one, within what
// the spore may still store today (its ingest quota, settings). last
// holds, for spores that have some, the store's copy of the bridge's line
// at BridgeSeq: the bridge must still have that same line there, or its
// log is not the one the store read before.
func ingest(ctx context.Context, spores []state.Spore, settings state.Settings, now time.Time, obs observation, last map[string]json.RawMessage, deadline time.Duration) map[string]*ingested {
	out := map[string]*ingested{}
	var todo []string
	base := map[string]uint64{}
	bound := map[string]ingestBound{}
	for _, sp := range spores {
		o, c := obs.spores[sp.ID], obs.clients[sp.ID]
		if c == nil || o.Bridge != BridgeUp || o.Damage != "" {
			// A damaged spore's lines wait in its bridge's log.
			continue
		}
		switch {
		case sp.HealthReason == string(ReasonBridgeLogLost):
			// Once lost, lost until a person resets it: a new log that
			// grows past the old one's length is still not the old one.
			out[sp.ID] = &ingested{base: sp.BridgeSeq, problem: ReasonBridgeLogLost,
				detail: fmt.Sprintf("the bridge's log is not the one the store read before; nothing is ingested until `sporectl reset %s`", sp.ID)}
		case o.BridgeLastSeq < sp.BridgeSeq:
			out[sp.ID] = &ingested{base: sp.BridgeSeq, problem: ReasonBridgeLogLost,
				detail: fmt.Sprintf("the bridge's log ends at line %d but the store holds its lines up to %d: the home lost lines (wiped or replaced); nothing is ingested until `sporectl reset %s`", o.BridgeLastSeq, sp.BridgeSeq, sp.ID)}
		case o.BridgeLastSeq > sp.BridgeSeq:
			quota := state.IngestQuotaOf(sp, settings)
			stored := state.StoredOn(sp.Activity, now)
			if stored >= quota {
				out[sp.ID] = &ingested{base: sp.BridgeSeq, problem: ReasonIngestQuota, detail: quotaText(stored, quota)}
				continue
			}
			todo = append(todo, sp.ID)
			base[sp.ID] = sp.BridgeSeq
			bound[sp.ID] = ingestBound{lines: maxIngestPerSpore, bytes: min(maxIngestBytesPerSpore, quota-stored),
				quota: quota-stored <= maxIngestBytesPerSpore, stored: stored, quotaBytes: quota}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	var mu sync.Mutex
	forEach(ctx, todo, bridgeWorkers, func(id string) {
		in := fetch(ctx, obs.clients[id], base[id], obs.spores[id].BridgeLastSeq, last[id], bound[id])
		mu.Lock()
		out[id] = in
		mu.Unlock()
	})
	return out
}

// ingestBound is what one fetch may take: lines and bytes of lines, and
// whether the bytes are the end of the spore's quota for the day (then
// reaching them is IngestQuota; else the rest waits for the next pass).
type ingestBound struct {
	lines      int
	bytes      int64
	quota      bool
	stored     int64 // the spore's stored bytes today, before this fetch
	quotaBytes int64 // its quota
}

// quotaText is the detail of an IngestQuota.
func quotaText(stored, quota int64) string {
	return fmt.Sprintf("it stored %s of its daily ingest quota of %s today (UTC); its bridge keeps the rest, taken from tomorrow on", mib(stored), mib(quota))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// fetch pages through a bridge's lines after base up to last (as its
// status said), within bound, checking each page against the contract
// (bridge.CheckPage: a breach keeps the lines before it, and nothing from
// it on) and that every number follows the one before.
func fetch(ctx context.Context, c BridgeClient, base, last uint64, known json.RawMessage, bound ingestBound) *ingested {
	in := &ingested{base: base}
	next := base + 1
	if known != nil {
		// Ask from the line the store has, to see that it is the same.
		page, err := c.Events(ctx, base-1, 1, 0)
		if err == nil {
			err = bridge.CheckPage(page, base-1, 1)
		}
		if detail := breachText(err); detail != "" {
			in.problem, in.detail = ReasonContractBreach, detail
			return in
		}
		if err != nil && !errors.Is(err, bridge.ErrAhead) {
			in.err = err
			return in
		}
		if err != nil || len(page.Events) == 0 || page.Events[0].Seq != base || !sameLine(page.Events[0].Line, known) {
			in.problem = ReasonBridgeLogLost
			in.detail = fmt.Sprintf("the bridge's line %d is not the one the store holds: its log was replaced (home wiped or swapped); nothing is ingested until `sporectl reset`", base)
			return in
		}
	}
	for next <= last && len(in.events) < bound.lines {
		limit := min(bridge.MaxLimit, bound.lines-len(in.events))
		if len(in.events) > 0 {
			// Ask for no more lines than the bytes left should hold at
			// the size seen so far: a page's lines are decoded whole,
			// and those past the bound would be read for nothing.
			avg := max(in.bytes/int64(len(in.events)), 1)
			limit = int(min(int64(limit), (bound.bytes-in.bytes)/avg+1))
		}
		page, err := c.Events(ctx, next-1, limit, 0)
		if err == nil {
			err = bridge.CheckPage(page, next-1, limit)
		}
		if detail := breachText(err); detail != "" {
			in.problem, in.detail = ReasonContractBreach, detail
			return in
		}
		if errors.Is(err, bridge.ErrAhead) {
			in.problem = ReasonBridgeLogLost
			in.detail = fmt.Sprintf("the bridge has no line %d: its log is not the one the store read before", next-1)
			return in
		}
		if err != nil {
			in.err = err
			return in
		}
		if len(page.Events) == 0 {
			return in
		}
		for _, ev := range page.Events {
			if ev.Seq != next {
				in.problem = ReasonIngestGap
				in.detail = fmt.Sprintf("expected the bridge's line %d, got %d: lines kept up to %d, nothing renumbered", next, ev.Seq, next-1)
				return in
			}
			if n := int64(len(ev.Line)); in.bytes+n > bound.bytes {
				if bound.quota {
					in.problem, in.detail = ReasonIngestQuota, quotaText(bound.stored+in.bytes, bound.quotaBytes)
				}
				return in
			}
			cnt := countLine(ev.Line)
			if cnt.forged != "" && in.problem == "" {
				// Kept as a line of the conversation, counted as no spend.
				in.problem = ReasonContractBreach
				in.detail = fmt.Sprintf("GET /v1/events: line %d %s", ev.Seq, cnt.forged)
			}
			in.events = append(in.events, state.Event{Kind: state.KindAgent, At: ev.At, BridgeSeq: ev.Seq, Line: ev.Line})
			in.counts = append(in.counts, cnt)
			in.bytes += int64(len(ev.Line))
			next++
		}
	}
	return in
}

// countOf is what line e adds to its spore's activity: as counted when
// fetched, or counted now for a line this fetch did not bring.
func (in *ingested) countOf(e state.Event) lineCounts {
	if in != nil && e.BridgeSeq > in.base {
		if i := e.BridgeSeq - in.base - 1; i < uint64(len(in.counts)) {
			return in.counts[i]
		}
	}
	return countLine(e.Line)
}

// sameLine compares two JSON lines as values' text, blanks aside (a store
// may keep a line compacted).
func sameLine(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// lastLines reads, for each spore about to be ingested, the store's copy
// of the bridge's line at its BridgeSeq, looking back a few events from
// the end of its log (lifecycle events may follow it). A line not found
// so near the end is not checked. A spore whose log's end does not read
// is that spore's damage, returned in damaged, not the pass's failure.
func lastLines(ctx context.Context, st state.Store, spores []state.Spore, obs observation) (known map[string]json.RawMessage, damaged map[string]*state.CorruptError, err error) {
	var todo []state.Spore
	for _, sp := range spores {
		if o := obs.spores[sp.ID]; obs.clients[sp.ID] != nil && o.Damage == "" && sp.BridgeSeq > 0 && o.BridgeLastSeq > sp.BridgeSeq {
			todo = append(todo, sp)
		}
	}
	if len(todo) == 0 {
		return map[string]json.RawMessage{}, nil, nil
	}
	err = st.View(ctx, func(tx state.Tx) error {
		known, damaged = map[string]json.RawMessage{}, map[string]*state.CorruptError{}
		for _, sp := range todo {
			tail, err := tx.Tail(ctx, sp.ID, lookBack)
			if errors.Is(err, state.ErrNotFound) {
				continue
			}
			if c, ok := state.SporeDamage(err); ok {
				damaged[sp.ID] = c
				continue
			}
			if err != nil {
				return err
			}
			for i := len(tail) - 1; i >= 0; i-- {
				if e := tail[i]; e.Kind == state.KindAgent && e.BridgeSeq == sp.BridgeSeq {
					known[sp.ID] = e.Line
					break
				}
			}
		}
		return nil
	})
	return known, damaged, err
}

// lookBack is how many events from the end lastLines reads. A spore whose
// last agent line is further back than this (many prompts and lifecycle
// events since) is ingested without the identity check; docs/recovery.md.
const lookBack = 256
