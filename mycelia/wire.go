package mycelia

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sporectl/sporectl/mycelia/auth"
)

// The wire contract of the API (docs/mycologists.md "Routes"): JSON in
// and out, times in RFC 3339, errors as {"error", "code"}.

// Headers a caller sends besides "Authorization: Bearer <token>".
const (
	// HeaderSpore names the calling spore; its token must match the hash
	// the store keeps for it (checked by mycelia/auth, which names it).
	HeaderSpore = auth.HeaderSpore
	// HeaderRequestID is the caller's idempotency key: a message sent
	// again with the same one (a retry) is recorded and delivered once.
	HeaderRequestID = "X-Sporectl-Request-Id"
)

// Limits of what a request may carry.
const (
	// MaxBodyBytes caps a request body; a larger one is refused with 413
	// before it is parsed.
	MaxBodyBytes = 128 << 10
	// MaxTextBytes caps a message's text (413): messages are short; a
	// mycologist reads the conversation itself.
	MaxTextBytes = 64 << 10
	// MaxRequestIDLen bounds HeaderRequestID.
	MaxRequestIDLen = 128
	// DefaultTurns and MaxTurns bound GET /api/spores/{id}?turns=N.
	DefaultTurns = 3
	MaxTurns     = 50
	// MaxTurnsText caps the text of one answer of that route; the oldest
	// lines are cut first.
	MaxTurnsText = 1 << 20
	// DedupWindow is how long a repeated request id is recognised once
	// its message was delivered (while undelivered, always).
	DedupWindow = 15 * time.Minute
)

// AskRequest is the body of POST /api/mycologist/summons.
type AskRequest struct {
	Text string `json:"text"`
}

// TellRequest is the body of POST /spores/{id}/prompt.
type TellRequest struct {
	Text string `json:"text"`
	// Wake wakes a sleeping target to deliver the message; without it a
	// sleeping target is refused with 409 (code "asleep").
	Wake bool `json:"wake,omitempty"`
	// Force skips the address check (a message the check would refuse
	// with 409 "misaddressed").
	Force bool `json:"force,omitempty"`
}

// SwarmTellRequest is the body of POST /api/swarm/tell.
type SwarmTellRequest struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// CompactRequest is the body of POST /api/swarm/compact.
type CompactRequest struct {
	Role string `json:"role"`
}

// Delivery states of SendResponse.State.
const (
	Delivered = "delivered" // the target's bridge took it
	Queued    = "queued"    // the target is working; its bridge queued it at Position
	Waiting   = "waiting"   // recorded in the target's outbox; the next pass delivers it
	// Dead: the target's bridge refused it for good; it is a dead letter
	// now (Detail says why; docs/bridge.md "Delivery").
	Dead = "dead"
)

// SendResponse answers every route that sends a message (202): the
// message is recorded in the store whatever State says.
type SendResponse struct {
	// ID is the message's outbox id (derived from the request id).
	ID       string `json:"id"`
	To       string `json:"to"`
	State    string `json:"state"`
	Position int    `json:"position,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Woke: this message set its sleeping target's desired state Running.
	Woke bool `json:"woke,omitempty"`
	// Duplicate: the request id was seen before; nothing new was recorded.
	Duplicate bool `json:"duplicate,omitempty"`
	// AddressCheck says how a tell's address was checked: "model",
	// "fallback", "fallback (model: REASON)" when the model could not
	// answer, "forced" (skipped for "force": true), or "retry" (the
	// message was recorded before). Empty on other routes.
	AddressCheck string `json:"address_check,omitempty"`
}

// SporeInfo is one spore in GET /api/spores.
type SporeInfo struct {
	ID        string `json:"id"`
	Colony    string `json:"colony"`
	Rank      string `json:"rank"`
	Swarm     string `json:"swarm,omitempty"`
	Role      string `json:"role,omitempty"`
	Desired   string `json:"desired"`
	Effective string `json:"effective"`
	Reason    string `json:"reason"`
	// Activity is what its bridge says the agent does (idle, working,
	// blocked, …), "" when the bridge was not asked or did not answer.
	Activity string `json:"activity"`
	LastSeq  uint64 `json:"last_seq"`
	// LastEventAt is when its log last grew (a prompt, a line, a wake).
	LastEventAt time.Time `json:"last_event_at,omitzero"`
	Pending     int       `json:"pending"`
}

// SporeList answers GET /api/spores.
type SporeList struct {
	Spores []SporeInfo `json:"spores"`
}

// SporeTurns answers GET /api/spores/{id}?turns=N.
type SporeTurns struct {
	ID        string `json:"id"`
	Desired   string `json:"desired"`
	Effective string `json:"effective"`
	// Turns is how many turns (prompts or messages, with what followed)
	// Text holds; fewer than asked when the log has fewer.
	Turns    int    `json:"turns"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Text is the conversation as `sporectl chat` prints it: no control
	// character but newlines.
	Text string `json:"text"`
	// Cut: the oldest lines were left out to keep under MaxTurnsText.
	Cut bool `json:"cut,omitempty"`
}

// LoopRequest is the body of POST /api/swarm/loop: Every (a Go duration,
// state.MinLoop to state.MaxLoop) starts or changes the loop; Stop ends it.
type LoopRequest struct {
	Every string `json:"every,omitempty"`
	Stop  bool   `json:"stop,omitempty"`
}

// LoopResponse answers POST /api/swarm/loop (200): the caller's loop as
// now recorded. Every is empty and Due zero once stopped.
type LoopResponse struct {
	Spore string    `json:"spore"`
	Every string    `json:"every,omitempty"`
	Due   time.Time `json:"due,omitzero"`
}

// CompactResponse answers POST /api/swarm/compact (202).
type CompactResponse struct {
	To string `json:"to"`
	// ID is the bridge's id of the queued /compact, Position its place.
	ID       string `json:"id"`
	Position int    `json:"position"`
}

// Error codes: the stable name of an error, beside its HTTP status.
const (
	CodeBadRequest    = "bad_request"
	CodeUnauthorized  = "unauthorized"
	CodeForbidden     = "forbidden"
	CodeNotFound      = "not_found"
	CodeAsleep        = "asleep"
	CodeStopped       = "stopped"
	CodeOverBudget    = "over_budget"
	CodeConflict      = "conflict"
	CodeNotUp         = "not_up"
	CodeTooLarge      = "too_large"
	CodeRateLimited   = "rate_limited"
	CodeUnavailable   = "unavailable"
	CodeInternal      = "internal"
	CodeNoMycologist  = "no_mycologist"
	CodeAmbiguousRole = "ambiguous_role"
	// CodeMisaddressed: the address check found a tell meant for another
	// spore (409); Error.MeantFor names it when known.
	CodeMisaddressed = "misaddressed"
)

// Error is an API error: the status, a stable code and a sentence for a
// person (never a token, never a stack). The client returns it for every
// 4xx/5xx answer.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"error"`
	// MeantFor is, for CodeMisaddressed, the spore of the sender's reach
	// the message looks meant for ("" when the check named none).
	MeantFor string `json:"meant_for,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

func errorf(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}
