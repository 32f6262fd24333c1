package bridge

import (
	"encoding/json"
	"time"
)

// State is what the agent is doing, as the bridge sees it.
type State string

const (
	StateStarting State = "starting" // the bridge is opening its log and queue
	StateIdle     State = "idle"     // nothing to do
	StateWorking  State = "working"  // a turn is running
	StateBlocked  State = "blocked"  // the last turn ended waiting for a person (permission or question)
	StateBackoff  State = "backoff"  // the agent keeps dying; the bridge waits before starting it again
)

// Status is GET /v1/status.
type Status struct {
	State         State  `json:"state"`
	SessionID     string `json:"session_id"`
	LastSeq       uint64 `json:"last_seq"`
	Queue         int    `json:"queue"`
	AgentPID      int    `json:"agent_pid"`
	AgentRestarts int    `json:"agent_restarts"`
	// Agent is "claude" or "echo" (the built-in demo agent).
	Agent string `json:"agent"`
	// Healthy is false while the bridge cannot append to its log (e.g. the
	// disk is full); Error then says why.
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
	// BackoffUntil is set in state backoff.
	BackoffUntil *time.Time `json:"backoff_until,omitempty"`
	// Prompt is the id of the prompt being worked on, if any.
	Prompt string `json:"prompt,omitempty"`
}

// PromptRequest is POST /v1/prompts.
type PromptRequest struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Text string `json:"text"`
}

// PromptAccepted is the 202 answer to POST /v1/prompts (and to compact).
type PromptAccepted struct {
	ID string `json:"id"`
	// Position is the prompt's place in the queue, 0 being the one running
	// or next to run; -1 for a duplicate whose prompt already ran.
	Position  int  `json:"position"`
	Duplicate bool `json:"duplicate,omitempty"`
}

// PromptState is GET /v1/prompts/{id}.
type PromptState struct {
	ID string `json:"id"`
	// State is queued, running or done.
	State    string `json:"state"`
	Position int    `json:"position"`
}

// Event is one numbered line.
type Event struct {
	Seq  uint64          `json:"seq"`
	At   time.Time       `json:"at"`
	Line json.RawMessage `json:"line"`
}

// Events is GET /v1/events.
type Events struct {
	Events  []Event `json:"events"`
	LastSeq uint64  `json:"last_seq"`
}

// ErrorBody is every 4xx/5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// Limits of the contract.
const (
	// MaxPromptBytes caps a prompt's text; a longer one is refused with 413.
	MaxPromptBytes = 256 << 10
	// DefaultLimit and MaxLimit bound a page of events.
	DefaultLimit = 500
	MaxLimit     = 5000
	// MaxWait bounds a long-poll.
	MaxWait = 60 * time.Second
)
