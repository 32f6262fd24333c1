package policy

import "time"

// Attention (docs/exit-codes.md, code 3): after a pass acted, a spore
// needs a person when the pass cannot bring it back itself, or it has not
// come back within its grace. What the pass is about to put right, or
// just did, is no page: a spore it put to sleep (Paused), one it started
// or restarted (Starting), one that is on its way up one pass after its
// start, one Dead waiting out its backoff.

// After is what a pass left of one spore, as NeedsAttention judges it.
type After struct {
	// Health is its effective health after the pass acted: Starting for
	// a spore the pass started, the desired Paused or Stopped for one it
	// stopped.
	Health Health
	// StartFailed: the runtime refused this pass's start of it.
	StartFailed bool
	// Dead: NotBefore is when its respawn is due (zero: due now), and
	// NotStarted says it was wished awake and never started since, so
	// its next start is a first one, not a respawn held back.
	NotBefore  time.Time
	NotStarted bool
	// Suspect: ComingUp says it is on its way up (its pod pending, its
	// bridge not answering yet, its old pod going away), and Started that
	// the pass before this one started it (it was recorded Starting): its
	// grace is that one interval.
	ComingUp bool
	Started  bool
}

// NeedsAttention reports whether a person must look at a spore a pass
// left as a says, at now: its breaker open or its stored data damaged
// (Error), its agent waiting for a person (Blocked), a start that failed,
// Dead past its backoff with nothing started, running against its wish
// (Diverged), or Suspect but for a spore coming up within its grace.
func NeedsAttention(a After, now time.Time) bool {
	switch a.Health {
	case Healthy, Paused, Stopped, Starting:
		return a.StartFailed
	case Dead:
		if a.StartFailed {
			return true
		}
		// Within its backoff, or about to get its first start: the next
		// pass starts it.
		return !a.NotStarted && !now.Before(a.NotBefore)
	case Suspect:
		return !(a.ComingUp && a.Started)
	}
	// Error, Blocked, Diverged, and a name this version does not know.
	return true
}
