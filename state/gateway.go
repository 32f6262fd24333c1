package state

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// The model gateway (docs/gateway.md): serve answers the spores' model
// calls and forwards them upstream with the key only serve holds, and
// counts each call's usage from the upstream's own answer into the
// calling spore's record, in the transaction that writes it. That count,
// not what the spore's bridge reports, is the spend budgets judge while
// the gateway is on (Settings.ModelGateway).

// Model gateway modes (Settings.ModelGateway).
const (
	// GatewayOn: spores reach the model through serve's /model/ with their
	// own token; the key is serve's alone. The default ("").
	GatewayOn = "on"
	// GatewayOff: the direct mode, the key in every spore's environment
	// and its spend its own report.
	GatewayOff = "off"
)

// Bounds of the gateway's record.
const (
	// MaxCountedCalls is how many of its latest model calls a spore's
	// record remembers by id, so a call counted twice (its start, then its
	// end, or by two serve replicas) adds only what it did not count yet.
	MaxCountedCalls = 64
	// MaxCallID bounds an upstream message id.
	MaxCallID = 128
)

// GatewayRecord is what serve's model gateway counted of a spore's model
// calls (written by CountModelCall alone).
type GatewayRecord struct {
	// ModelUsage is the counted usage per hour over the spore's last
	// MaxActivity hours, ascending by hour; hours with nothing are left
	// out.
	ModelUsage []HourUsage `json:"model_usage,omitempty"`
	// ModelCalls are the latest calls counted, oldest first, at most
	// MaxCountedCalls: what each has counted so far, by its upstream
	// message id.
	ModelCalls []CountedCall `json:"model_calls,omitempty"`
	// GrantUntil is when a person's leave for the spore to call the
	// model over its budget ends: a pass that delivers it a prompt an
	// operator marked over-budget (prompt --over-budget, the page's
	// switch) sets it to policy.GrantFor from then (reconcile's commit),
	// so the turn that prompt starts is not refused at the gateway
	// (docs/budgets.md).
	GrantUntil time.Time `json:"model_grant_until,omitzero"`
}

// Usage is a model call's usage as the upstream answers it.
type Usage struct {
	InputTokens         int64 `json:"input_tokens,omitempty"`
	OutputTokens        int64 `json:"output_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	// CostMicros is the call's price in millionths of a US dollar, from
	// the gateway's price table (docs/gateway.md).
	CostMicros int64 `json:"cost_micros,omitempty"`
}

// IsZero reports whether u counts nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add is u and o together, each count stopping at the largest int64.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:         AddCount(u.InputTokens, o.InputTokens),
		OutputTokens:        AddCount(u.OutputTokens, o.OutputTokens),
		CacheCreationTokens: AddCount(u.CacheCreationTokens, o.CacheCreationTokens),
		CacheReadTokens:     AddCount(u.CacheReadTokens, o.CacheReadTokens),
		CostMicros:          AddCount(u.CostMicros, o.CostMicros),
	}
}

// Beyond is what u counts beyond counted, field by field, never below 0:
// what a later report of the same call adds (the upstream's counts of a
// call only grow: message_start, then message_delta).
func (u Usage) Beyond(counted Usage) Usage {
	d := func(a, b int64) int64 { return max(a-b, 0) }
	return Usage{
		InputTokens:         d(u.InputTokens, counted.InputTokens),
		OutputTokens:        d(u.OutputTokens, counted.OutputTokens),
		CacheCreationTokens: d(u.CacheCreationTokens, counted.CacheCreationTokens),
		CacheReadTokens:     d(u.CacheReadTokens, counted.CacheReadTokens),
		CostMicros:          d(u.CostMicros, counted.CostMicros),
	}
}

// Spend is u as a budget counts it: input tokens with cache creation, and
// output tokens (cache reads are not counted, as for the bridge's
// report: docs/budgets.md), and the cost.
func (u Usage) Spend() Spend {
	return Spend{Tokens: AddCount(AddCount(u.InputTokens, u.CacheCreationTokens), u.OutputTokens), CostMicros: u.CostMicros}
}

// HourUsage is the usage counted in one UTC hour, and how many calls
// started in it.
type HourUsage struct {
	Hour  time.Time `json:"hour"` // UTC, on the hour
	Calls int64     `json:"calls,omitempty"`
	Usage
}

// CountedCall is one call the gateway counted: its upstream message id,
// the hour it is counted in, and what it counted so far.
type CountedCall struct {
	ID   string    `json:"id"`
	Hour time.Time `json:"hour"`
	Usage
}

// Count is r with the call id's usage u (the upstream's counts so far,
// which only grow) counted at now, and what that added: a call not known
// yet is counted whole in now's hour; a known one adds what u has beyond
// what it counted, in the hour it was first counted in (so a call is one
// hour's). A call forgotten (more than MaxCountedCalls since) is counted
// as new.
func (r GatewayRecord) Count(id string, u Usage, now time.Time) (GatewayRecord, Usage) {
	// A list of its own: r may be a store's cached record.
	calls := make([]CountedCall, 0, len(r.ModelCalls)+1)
	hour := now.UTC().Truncate(time.Hour)
	var prev Usage
	fresh := true
	for _, c := range r.ModelCalls {
		if c.ID == id {
			prev, hour, fresh = c.Usage, c.Hour, false
			continue
		}
		calls = append(calls, c)
	}
	added := u.Beyond(prev)
	calls = append(calls, CountedCall{ID: id, Hour: hour, Usage: prev.Add(added)})
	if len(calls) > MaxCountedCalls {
		calls = calls[len(calls)-MaxCountedCalls:]
	}
	r.ModelCalls, r.ModelUsage = calls, addHourUsage(r.ModelUsage, hour, added, fresh)
	return r, added
}

// addHourUsage is hs with u (and a call, when call) added to hour, the
// hours still ascending and at most MaxActivity of them.
func addHourUsage(hs []HourUsage, hour time.Time, u Usage, call bool) []HourUsage {
	if u.IsZero() && !call {
		return hs
	}
	out := make([]HourUsage, 0, len(hs)+1)
	done := false
	for _, h := range hs {
		switch {
		case !done && h.Hour.Equal(hour):
			h.Usage = h.Usage.Add(u)
			if call {
				h.Calls = AddCount(h.Calls, 1)
			}
			done = true
		case !done && h.Hour.After(hour):
			out = append(out, newHour(hour, u, call))
			done = true
		}
		out = append(out, h)
	}
	if !done {
		out = append(out, newHour(hour, u, call))
	}
	if len(out) > MaxActivity {
		out = out[len(out)-MaxActivity:]
	}
	return out
}

func newHour(hour time.Time, u Usage, call bool) HourUsage {
	h := HourUsage{Hour: hour, Usage: u}
	if call {
		h.Calls = 1
	}
	return h
}

// CountedOn is the usage r counted on the UTC day that holds now.
func (r GatewayRecord) CountedOn(now time.Time) Usage {
	day := Day(now)
	var u Usage
	for i := len(r.ModelUsage) - 1; i >= 0; i-- {
		h := r.ModelUsage[i]
		if h.Hour.Before(day) {
			break
		}
		if h.Hour.Sub(day) < 24*time.Hour {
			u = u.Add(h.Usage)
		}
	}
	return u
}

// CountModelCall counts, inside tx, the usage u of the model call id
// (the upstream's message id) of spore sporeID at now, through
// UpdateStatus, and answers what it added (zero when the call had counted
// that much already). The gateway calls it before it passes on the part
// of the answer that carries u, so whatever a spore was given is counted.
func CountModelCall(ctx context.Context, tx Tx, sporeID, id string, u Usage, now time.Time) (Usage, error) {
	if err := validateCallID(id); err != nil {
		return Usage{}, err
	}
	var added Usage
	_, err := UpdateStatus(ctx, tx, sporeID, func(_ Spore, st *Status) error {
		st.GatewayRecord, added = st.GatewayRecord.Count(id, u, now)
		return nil
	})
	if err != nil {
		return Usage{}, fmt.Errorf("count model call %s of %s: %w", id, sporeID, err)
	}
	return added, nil
}

func validateCallID(id string) error {
	if id == "" || len(id) > MaxCallID {
		return &InvalidError{Field: "model call id", Value: preview(id), Reason: fmt.Sprintf("must be 1 to %d bytes", MaxCallID)}
	}
	for _, c := range []byte(id) {
		if c <= ' ' || c >= 0x7f {
			return &InvalidError{Field: "model call id", Value: preview(id), Reason: "must be printable ASCII without spaces"}
		}
	}
	return nil
}

// validate checks the record's bounds and order.
func (r *GatewayRecord) validate() error {
	if len(r.ModelUsage) > MaxActivity {
		return &InvalidError{Field: "model usage", Value: strconv.Itoa(len(r.ModelUsage)) + " hours", Reason: fmt.Sprintf("must hold at most %d hours", MaxActivity)}
	}
	for i, h := range r.ModelUsage {
		v := h.Hour.Format(time.RFC3339Nano)
		if !h.Hour.Equal(h.Hour.Truncate(time.Hour)) {
			return &InvalidError{Field: "model usage hour", Value: v, Reason: "must be on the hour"}
		}
		if i > 0 && !r.ModelUsage[i-1].Hour.Before(h.Hour) {
			return &InvalidError{Field: "model usage hour", Value: v, Reason: "must be after the hour before it"}
		}
		if h.Calls < 0 || h.Usage.negative() {
			return &InvalidError{Field: "model usage", Value: v, Reason: "counts must not be negative"}
		}
	}
	if len(r.ModelCalls) > MaxCountedCalls {
		return &InvalidError{Field: "model calls", Value: strconv.Itoa(len(r.ModelCalls)), Reason: fmt.Sprintf("must hold at most %d calls", MaxCountedCalls)}
	}
	for _, c := range r.ModelCalls {
		if err := validateCallID(c.ID); err != nil {
			return err
		}
		if !c.Hour.Equal(c.Hour.Truncate(time.Hour)) {
			return &InvalidError{Field: "model call hour", Value: c.Hour.Format(time.RFC3339Nano), Reason: "must be on the hour"}
		}
		if c.Usage.negative() {
			return &InvalidError{Field: "model call", Value: c.ID, Reason: "counts must not be negative"}
		}
	}
	return nil
}

func (u Usage) negative() bool {
	return u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheCreationTokens < 0 || u.CacheReadTokens < 0 || u.CostMicros < 0
}
