package bridge

import (
	"encoding/json"
	"time"
)

// State is what the agent is doing, as the bridge sees it.
type State string

// Known reports whether s is one of the states the contract names; any
// other is a contract breach (the bridge is the agent's: its words are
// checked, never shown raw).
func (s State) Known() bool {
	switch s {
	case StateStarting, StateIdle, StateWorking, StateBlocked, StateBackoff:
		return true
	}
	return false
}

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
	// AgentError is why the agent's last start failed (it could not be
	// run, or exited without writing a line), at most MaxStatusText
	// bytes; "" once a turn starts. The reader bounds it again: the
	// bridge is the agent's.
	AgentError string `json:"agent_error,omitempty"`
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

	// MaxLineBytes bounds one line as the bridge stores and serves it: a
	// longer line of agent output is stored as a truncation marker
	// (bridge/eventlog), and a served line longer than this breaks the
	// contract.
	MaxLineBytes = 1 << 20
	// MaxPageLineBytes bounds the lines of one page of events: the bridge
	// stops gathering a page once it holds this many bytes of lines, but
	// always serves at least one line. Small, so that a page costs its
	// reader little: a pass asks many bridges at once.
	MaxPageLineBytes = 1 << 20
	// MaxEventsAnswerBytes bounds the body of a page of events: its lines
	// (MaxPageLineBytes, plus the one line that may pass it) and, for each
	// of up to MaxLimit events, its number, time and keys. The client
	// reads no more; a longer answer breaks the contract.
	MaxEventsAnswerBytes = MaxPageLineBytes + MaxLineBytes + MaxLimit*maxEventFraming
	// MaxAnswerBytes bounds the body of every other answer (status,
	// prompts, compact, interrupt, errors): each is a few small fields.
	MaxAnswerBytes = 64 << 10
	// maxEventFraming is what one event adds around its line:
	// {"seq":…,"at":"…","line":…} is under 100 bytes.
	maxEventFraming = 128
	// MaxStatusText bounds each text of a status (session id, agent,
	// error, prompt id, agent_error) as a pass keeps it; a longer one is
	// cut. The bridge cuts its agent_error to it too.
	MaxStatusText = 256
)
