package outbox

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Message is what is recorded: who sends what to whom, and how.
type Message struct {
	To   string
	From string // "user:alice", "spore:x", …
	// Kind is state.KindPrompt for a person's prompt, state.KindMessage
	// for one from a spore or from sporectl itself.
	Kind state.EventKind
	// Mark is the sender's mark, the first line of what the agent reads
	// ("[from spore x]", …): chosen by the sending program from who sent
	// it (serve: the authenticated caller), never from the text. Empty
	// for a person's prompt.
	Mark string
	// Text is the sender's own words; Compose rewrites every mark-shaped
	// token in it.
	Text string
	// Note, when set, follows the text: how to answer, written by the
	// sending program.
	Note string
	// Verbatim says Text is sporectl's own, its mark at its head (a swarm
	// loop's prompt): the agent reads it as written, nothing rewritten.
	// Never set for words anyone else wrote.
	Verbatim bool
	// Wake sets desired Running on a sleeping target (with an event);
	// without it a sleeping target is refused with *AsleepError, unless
	// idle put it to sleep and its colony wakes on a message (admit).
	Wake bool
	// OverBudget delivers it to a target over its budget (an operator's
	// --over-budget); without it such a target's message is queued and
	// Send answers *OverBudgetError.
	OverBudget bool
}

// kind is m's event kind: a person's prompt unless said otherwise.
func (m Message) kind() state.EventKind {
	if m.Kind == "" {
		return state.KindPrompt
	}
	return m.Kind
}

// entry is m's outbox entry under id: its text is what the agent reads
// (Compose), and the message event keeps the same text.
func (m Message) entry(id string, now time.Time) state.OutboxEntry {
	return state.OutboxEntry{ID: id, Spore: m.To, From: m.From, Text: Compose(m), At: now, Wake: m.Wake, OverBudget: m.OverBudget}
}

// NewMessageID is a fresh outbox id: 96 random bits never repeat in a
// store (crypto/rand does not fail; it would crash the program instead).
func NewMessageID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "p-" + hex.EncodeToString(b)
}
