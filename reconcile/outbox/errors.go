package outbox

import (
	"errors"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The refusals of a message, and the one answer that recorded it
// (OverBudgetError). Each says what was written: nothing, but for an
// over-budget target.

// ErrAsleep: the target sleeps and the sender did not ask to wake it.
var ErrAsleep = errors.New("the spore is asleep")

// AsleepError says which spore and its desired state; it wraps ErrAsleep.
type AsleepError struct {
	ID      string
	Desired state.Desired
}

func (e *AsleepError) Error() string {
	return fmt.Sprintf("spore %s is asleep (desired %s): nothing was sent; pass --wake to wake it and deliver", e.ID, e.Desired)
}
func (e *AsleepError) Unwrap() error { return ErrAsleep }

// ErrOverBudget: the target reached its budget; the message was queued,
// not delivered (docs/budgets.md).
var ErrOverBudget = errors.New("the spore is over budget")

// OverBudgetError says which spore, which budget it reached and the
// entry that waits in its outbox; it wraps ErrOverBudget. Unlike
// AsleepError, the message was recorded.
type OverBudgetError struct {
	ID    string
	Over  string // "24/20 tokens today", "colony lab: $2.10/$2.00 today"
	Entry string
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("spore %s is over budget (%s): %s is queued and is delivered the next UTC day or once its budget is raised", e.ID, e.Over, e.Entry)
}
func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// StoppedError refuses a message that would wake a stopped spore.
type StoppedError struct{ ID string }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("spore %s is stopped: nothing was sent; only a person wakes it (sporectl wake %s)", e.ID, e.ID)
}

// RateLimitError refuses a message over its sender's limit; nothing was
// written. RetryAfter is how long until the sender is under it again.
type RateLimitError struct {
	Spore      string
	Limit      int
	Per        time.Duration
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("spore %s sent %d messages in the last %s, its limit: nothing was sent; try again in %s", e.Spore, e.Limit, e.Per, e.RetryAfter)
}
