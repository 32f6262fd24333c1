package policy

import "github.com/sporectl/sporectl/state"

// Health is a spore's health: what a pass derives from its wish, what it
// observed and its breaker (reconcile.Health), recorded in its status
// (state.Health). The names below are the only ones a pass writes
// (docs/health.md); the store checks only their grammar.
type Health = state.Health

const (
	Healthy  Health = "Healthy"  // desired Running; running, bridge up, agent not blocked
	Dead     Health = "Dead"     // desired Running; nothing alive
	Diverged Health = "Diverged" // reality differs in another way (e.g. runs while asleep)
	Suspect  Health = "Suspect"  // something runs but the bridge does not answer, or it is not up yet
	Blocked  Health = "Blocked"  // the agent waits for a person
	Paused   Health = "Paused"   // asleep as desired
	Stopped  Health = "Stopped"  // off as desired
	Error    Health = "Error"    // circuit breaker open (a person must `reset`), or its stored data is damaged (`repair`)
	// Starting is recorded, never derived: a pass writes it right after it
	// started a spore, not yet seen alive; dying from here counts as a
	// crash. The next pass derives one of the others.
	Starting Health = "Starting"
)

// Derived are the healths a pass derives from what it observed, each
// once (for whoever counts spores by health: reconcile/metrics). Starting
// is not among them: it is only recorded.
var Derived = []Health{Healthy, Dead, Diverged, Suspect, Blocked, Paused, Stopped, Error}

// OK reports whether h needs nobody's attention.
func OK(h Health) bool { return h == Healthy || h == Paused || h == Stopped }
