package pgstore

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// checkBody validates text kept in a bytea column: any valid UTF-8,
// NUL bytes included, which round-trip exactly.
func checkBody(field, v string) error {
	if !utf8.ValidString(v) {
		return &state.InvalidError{Field: field, Value: v, Reason: "is not valid UTF-8"}
	}
	return nil
}

// checkText validates text kept in a text column, which Postgres cannot
// store with a NUL byte.
func checkText(field, v string) error {
	if err := checkBody(field, v); err != nil {
		return err
	}
	if strings.IndexByte(v, 0) >= 0 {
		return &state.InvalidError{Field: field, Value: v, Reason: "contains a NUL byte"}
	}
	return nil
}

func checkEvent(i int, e *state.Event) error {
	field := func(name string) string { return fmt.Sprintf("event %d %s", i+1, name) }
	if !state.ValidKind(e.Kind) {
		return &state.InvalidError{Field: field("kind"), Value: string(e.Kind), Reason: "must be one of lifecycle, prompt, agent, message, breaker"}
	}
	if err := checkBody(field("action"), e.Action); err != nil {
		return err
	}
	if err := checkBody(field("from"), e.From); err != nil {
		return err
	}
	if err := checkBody(field("text"), e.Text); err != nil {
		return err
	}
	if len(e.Line) > 0 && !json.Valid(e.Line) {
		return &state.InvalidError{Field: field("line"), Value: string(e.Line), Reason: "is not valid JSON"}
	}
	return nil
}

// checkSpore is checkWish and checkStatus for a whole record
// (CreateSpore), with the model's rule that the status is not ahead of the
// wish.
func checkSpore(sp *state.Spore) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	if err := checkWishColumns(&sp.Wish); err != nil {
		return err
	}
	return checkStatusColumns(&sp.Status)
}

func checkWish(w *state.Wish) error {
	if err := w.Validate(); err != nil {
		return err
	}
	return checkWishColumns(w)
}

func checkStatus(st *state.Status) error {
	if err := st.Validate(); err != nil {
		return err
	}
	return checkStatusColumns(st)
}

// checkWishColumns and checkStatusColumns refuse what the model accepts
// but the columns cannot hold, before it reaches SQL: a failed statement
// would abort the whole transaction, where an InvalidError leaves it
// usable.
func checkWishColumns(w *state.Wish) error {
	// Validate accepts any case ("running"); the column holds the state
	// names as spelled in the model, so other spellings are refused here
	// instead of failing the CHECK constraint.
	if d, _ := state.ParseDesired(string(w.Desired)); d != w.Desired {
		return &state.InvalidError{Field: "desired state", Value: string(w.Desired), Reason: "must be spelled Running, Paused or Stopped"}
	}
	for _, f := range []struct{ name, v string }{
		{"image", w.Spec.Image}, {"cpu", w.Spec.CPU}, {"memory", w.Spec.Memory}, {"storage", w.Spec.Storage},
	} {
		if err := checkText("spore "+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func checkStatusColumns(st *state.Status) error {
	// bigint columns: a uint64 past MaxInt64 would wrap negative.
	// (Validate already bounds ObservedGeneration, and the wish's
	// Generation.)
	if st.BridgeSeq > math.MaxInt64 {
		return &state.InvalidError{Field: "bridge seq", Value: strconv.FormatUint(st.BridgeSeq, 10), Reason: "must be at most 9223372036854775807"}
	}
	for _, f := range []struct{ name, v string }{
		{"health", string(st.Health)}, {"health reason", st.HealthReason},
	} {
		if err := checkText("spore "+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// checkEntry applies the outbox grammar both backends share: the id is an
// idempotency key of 1 to 128 printable ASCII characters without spaces.
func checkEntry(e *state.OutboxEntry) error {
	if err := state.ValidateID(e.Spore); err != nil {
		return err
	}
	if e.ID == "" || len(e.ID) > 128 {
		return &state.InvalidError{Field: "message id", Value: e.ID, Reason: "must be 1 to 128 characters"}
	}
	for i := 0; i < len(e.ID); i++ {
		if c := e.ID[i]; c <= ' ' || c >= 0x7f {
			return &state.InvalidError{Field: "message id", Value: e.ID, Reason: "must be printable ASCII without spaces"}
		}
	}
	if err := checkBody("message from", e.From); err != nil {
		return err
	}
	return checkBody("message text", e.Text)
}
