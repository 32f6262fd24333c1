package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// EventKind names what an event records.
type EventKind string

const (
	// KindLifecycle: the store changed the spore (created, woke, slept,
	// stopped, reset, …); Action says which.
	KindLifecycle EventKind = "lifecycle"
	// KindPrompt: a person's prompt, with From naming who sent it.
	KindPrompt EventKind = "prompt"
	// KindAgent: one line the agent wrote, as numbered by the bridge.
	KindAgent EventKind = "agent"
	// KindMessage: a message from another spore, delivered as a prompt.
	KindMessage EventKind = "message"
	// KindBreaker: the circuit breaker opened, closed or backed off.
	KindBreaker EventKind = "breaker"
)

// ValidKind reports whether k is one of the kinds above.
func ValidKind(k EventKind) bool {
	switch k {
	case KindLifecycle, KindPrompt, KindAgent, KindMessage, KindBreaker:
		return true
	}
	return false
}

// Event is one entry of a spore's log. Seq is assigned by the store:
// per spore it starts at 1 and has no gaps.
type Event struct {
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Kind EventKind `json:"kind"`
	// Action qualifies lifecycle and breaker events ("created", "opened").
	Action string `json:"action,omitempty"`
	// From is the sender of a prompt or message ("user:alice", "spore:x").
	From string `json:"from,omitempty"`
	// Text is a prompt's or message's text, or a lifecycle note.
	Text string `json:"text,omitempty"`
	// BridgeSeq is the bridge's own number for an agent line.
	BridgeSeq uint64 `json:"bridge_seq,omitempty"`
	// Line is the agent's line as it came: JSON, or a JSON string where the
	// agent did not write JSON.
	Line json.RawMessage `json:"line,omitempty"`
}

// OutboxEntry is a prompt waiting to be delivered to a spore. ID is an
// idempotency key: the bridge treats a redelivered ID as a no-op.
type OutboxEntry struct {
	ID    string    `json:"id"`
	Spore string    `json:"spore"`
	From  string    `json:"from"`
	Text  string    `json:"text"`
	At    time.Time `json:"at"`
	// Wake asks reconcile to wake a sleeping spore to deliver this.
	Wake bool `json:"wake,omitempty"`
	// OverBudget: an operator asked to deliver this to a spore over its
	// budget (docs/budgets.md); entries without it wait for the budget.
	OverBudget bool `json:"over_budget,omitempty"`
	// Dead is set on a dead letter: an entry its spore's bridge refused
	// for good (Tx.Bury). It stays in the store, out of the queue
	// (Outbox and Pending skip it), until someone drops it (Dequeue).
	Dead *DeadLetter `json:"dead,omitempty"`
}

// DeadLetter is why and when an outbox entry left the queue undelivered.
type DeadLetter struct {
	// Reason is single-line text of at most MaxDeadReason bytes: what the
	// bridge answered ("413: prompt too large").
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// MaxDeadReason bounds a dead letter's reason: it quotes a bridge, which
// is the agent's (docs/bridge.md).
const MaxDeadReason = 256

// CheckDeadLetter applies the dead-letter grammar both backends share.
func CheckDeadLetter(d DeadLetter) error {
	switch {
	case d.Reason == "" || len(d.Reason) > MaxDeadReason || !utf8.ValidString(d.Reason):
		return &InvalidError{Field: "dead letter reason", Value: fmt.Sprintf("(%d bytes)", len(d.Reason)), Reason: fmt.Sprintf("must be 1 to %d bytes of UTF-8", MaxDeadReason)}
	case strings.ContainsFunc(d.Reason, unicode.IsControl):
		return &InvalidError{Field: "dead letter reason", Value: d.Reason, Reason: "must be one line without control characters"}
	case d.At.IsZero():
		return &InvalidError{Field: "dead letter time", Value: "", Reason: "must be set"}
	}
	return nil
}
