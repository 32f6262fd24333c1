package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Status is what reconcile passes concluded about a spore, written by
// UpdateStatus (the one writer) at the wish's generation. Bookkeeping,
// not observation: what runs is still recomputed by every command.
//
// It is cut by owner: each embedded struct holds the fields one step of a
// pass changes (its comment names the step), so a new field goes next to
// its writer's others, and a time in it is stamped by that struct's
// stamped (PostgreSQL also needs its column: state/pgstore/spores.go).
// reconcile/wish also resets fields of several when a wish changes
// (reset, loop). A reader names a field, never its
// group (st.Health): the fields are promoted through the embedding, and
// the JSON form stays one flat object whose keys are the fields' own;
// the order of keys in it carries no meaning (docs/state-format.md).
type Status struct {
	// ObservedGeneration is the wish generation this status was written
	// against, set by UpdateStatus itself (StatusAtWish). A store refuses
	// a status whose ObservedGeneration is not the stored wish's
	// (ErrStale): it was concluded from an older read.
	ObservedGeneration uint64 `json:"observed_generation,omitempty"`

	HealthRecord
	IngestRecord
	UpkeepRecord
	SummonsRecord
	GatewayRecord
}

// HealthRecord is a pass's health and crash bookkeeping (DESIGN
// "Health"), written by reconcile's plan when it records the pass
// (plan.go) from reconcile/policy's decisions; reconcile/wish clears it
// on reset. Timers are timestamps so a cron reconcile acts when they are
// due.
type HealthRecord struct {
	Restarts    int         `json:"restarts,omitempty"`
	Failures    []time.Time `json:"failures,omitempty"`  // recent crash times inside the breaker window
	NotBefore   time.Time   `json:"not_before,omitzero"` // next respawn allowed at
	BreakerOpen bool        `json:"breaker_open,omitempty"`

	// Health and HealthReason are the last effective health (Dead) and
	// reason code ("OOMKilled") that a pass recorded as a transition
	// event, so the next pass writes such an event only when they change.
	// HealthReason is short single-line text (at most MaxHealthLen bytes).
	Health       Health `json:"health,omitempty"`
	HealthReason string `json:"health_reason,omitempty"`
}

// IngestRecord is what ingest keeps of the lines it takes in from a
// spore's bridge, in the transaction that appends them: the cursor
// (reconcile's plan.go), the hourly usage (commit.go) and when the spore
// was last active (plan.go, and commit.go when it delivers a prompt).
type IngestRecord struct {
	BridgeSeq uint64 `json:"bridge_seq,omitempty"` // last bridge line ingested

	// Activity is what the spore did per hour over its last MaxActivity
	// hours, counted by ingest from the lines it takes in, in the same
	// transaction (so the page's graph and "today" figures read one
	// record, never the log). Ascending by hour; hours with nothing are
	// left out.
	Activity []HourActivity `json:"activity,omitempty"`

	// ActiveAt is when a pass last saw the spore do something: it
	// ingested lines from it or delivered it a prompt. Idle time is
	// measured from the later of it and the wish's Updated (docs/sleep.md).
	ActiveAt time.Time `json:"active_at,omitzero"`
}

// UpkeepRecord holds the timers of a pass's upkeep (reconcile's
// upkeep.go); reconcile/wish sets them anew when the wish's loop changes.
type UpkeepRecord struct {
	// LoopDue is when the next loop prompt is due (see Wish Loop); a pass
	// that finds it past, for an awake spore, records one prompt and moves
	// it on past now, in the same transaction, so each due time is
	// prompted once.
	LoopDue time.Time `json:"loop_due,omitzero"`
}

// SummonsRecord is what the summons (reconcile's summons.go) keeps on the
// [arch] mycologist's record.
type SummonsRecord struct {
	// Incidents are the incidents a pass has raised a summons for, so each
	// is raised once, and one "summons:<sender>" entry per summons, which
	// the sender's limit counts (reconcile/summons_limit.go): at most
	// MaxIncidents, oldest dropped first.
	Incidents []Incident `json:"incidents,omitempty"`
}

// StatusAtWish is s's status as written against s's wish: the status with
// ObservedGeneration set to the wish's generation. A writer that read s
// in its transaction and changed only the status passes this to
// PutStatus.
func (s Spore) StatusAtWish() Status {
	st := s.Status
	st.ObservedGeneration = s.Generation
	return st
}

// Equal reports whether st and o say the same, compared as the stores
// keep them (their JSON form, times at Precision): no list of fields to
// keep in step, so a field a pass starts writing is never dropped as "no
// change".
func (st Status) Equal(o Status) bool {
	a, errA := json.Marshal(st.Stamped())
	b, errB := json.Marshal(o.Stamped())
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// Stamped returns st with every time as a store keeps it.
func (st Status) Stamped() Status {
	st.HealthRecord = st.HealthRecord.stamped()
	st.IngestRecord = st.IngestRecord.stamped()
	st.UpkeepRecord = st.UpkeepRecord.stamped()
	st.GatewayRecord.GrantUntil = Stamp(st.GatewayRecord.GrantUntil)
	return st
}

func (r HealthRecord) stamped() HealthRecord {
	r.NotBefore = Stamp(r.NotBefore)
	if r.Failures != nil {
		f := make([]time.Time, len(r.Failures))
		for i, t := range r.Failures {
			f[i] = Stamp(t)
		}
		r.Failures = f
	}
	return r
}

func (r IngestRecord) stamped() IngestRecord {
	r.ActiveAt = Stamp(r.ActiveAt)
	return r
}

func (r UpkeepRecord) stamped() UpkeepRecord {
	r.LoopDue = Stamp(r.LoopDue)
	return r
}

// clone is st with lists of its own, so a change that writes into one in
// place (an hour's count, a failure's time) changes neither the record it
// is compared with nor, on a store that hands out what it caches, the
// stored one.
func (st Status) clone() Status {
	st.HealthRecord.Failures = slices.Clone(st.HealthRecord.Failures)
	st.IngestRecord.Activity = slices.Clone(st.IngestRecord.Activity)
	st.SummonsRecord.Incidents = slices.Clone(st.SummonsRecord.Incidents)
	st.GatewayRecord.ModelUsage = slices.Clone(st.GatewayRecord.ModelUsage)
	st.GatewayRecord.ModelCalls = slices.Clone(st.GatewayRecord.ModelCalls)
	return st
}

// Validate checks every field of the status that has a grammar.
func (s *Status) Validate() error {
	if s.ObservedGeneration > math.MaxInt64 {
		return &InvalidError{Field: "observed generation", Value: strconv.FormatUint(s.ObservedGeneration, 10), Reason: "must be at most 9223372036854775807"}
	}
	if err := validateActivity(s.Activity); err != nil {
		return err
	}
	if err := validateIncidents(s.Incidents); err != nil {
		return err
	}
	if err := s.GatewayRecord.validate(); err != nil {
		return err
	}
	return s.HealthRecord.validate()
}

func (r *HealthRecord) validate() error {
	if !r.Health.Valid() {
		return &InvalidError{Field: "health", Value: string(r.Health), Reason: fmt.Sprintf("must be empty or a health state's name: a capital letter, then letters, at most %d bytes", MaxHealthName)}
	}
	if len(r.HealthReason) > MaxHealthLen {
		return &InvalidError{Field: "health reason", Value: r.HealthReason, Reason: fmt.Sprintf("must be at most %d bytes", MaxHealthLen)}
	}
	return validateText("health reason", r.HealthReason)
}

func validateActivity(hs []HourActivity) error {
	if len(hs) > MaxActivity {
		return &InvalidError{Field: "activity", Value: strconv.Itoa(len(hs)) + " hours", Reason: fmt.Sprintf("must hold at most %d hours", MaxActivity)}
	}
	for i, h := range hs {
		v := h.Hour.Format(time.RFC3339Nano)
		if !h.Hour.Equal(h.Hour.Truncate(time.Hour)) {
			return &InvalidError{Field: "activity hour", Value: v, Reason: "must be on the hour"}
		}
		if i > 0 && !hs[i-1].Hour.Before(h.Hour) {
			return &InvalidError{Field: "activity hour", Value: v, Reason: "must be after the hour before it"}
		}
		if h.Turns < 0 || h.ToolCalls < 0 || h.InputTokens < 0 || h.OutputTokens < 0 || h.CostMicros < 0 || h.StoredBytes < 0 {
			return &InvalidError{Field: "activity", Value: v, Reason: "counts must not be negative"}
		}
	}
	return nil
}

func validateIncidents(is []Incident) error {
	if len(is) > MaxIncidents {
		return &InvalidError{Field: "incidents", Value: strconv.Itoa(len(is)), Reason: fmt.Sprintf("must be at most %d", MaxIncidents)}
	}
	for _, in := range is {
		if in.Key == "" || len(in.Key) > MaxIncidentKey {
			return &InvalidError{Field: "incident key", Value: in.Key, Reason: fmt.Sprintf("must be 1 to %d bytes", MaxIncidentKey)}
		}
		if err := validateText("incident key", in.Key); err != nil {
			return err
		}
	}
	return nil
}
