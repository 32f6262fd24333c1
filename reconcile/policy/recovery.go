package policy

import (
	"slices"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Recovery (docs/health.md "Recovery"): a spore found dead after it was
// alive has crashed. It is respawned after a backoff that doubles with
// each crash in the breaker's window, up to its maximum; the crash that
// fills the window to breaker-failures opens the breaker instead (no
// more respawns until a person's reset). A long healthy stretch forgets
// the crashes.

// Backoff is the wait after the n-th crash in the window: initial,
// doubling, capped at max. pol has its defaults filled.
func Backoff(pol state.RecoveryPolicy, n int) time.Duration {
	d := time.Duration(pol.BackoffInitial)
	for i := 1; i < n && d < time.Duration(pol.BackoffMax); i++ {
		d *= 2
	}
	return min(d, time.Duration(pol.BackoffMax))
}

// RecentFailures keeps the crash times inside the window and adds now.
func RecentFailures(f []time.Time, now time.Time, window time.Duration) []time.Time {
	var out []time.Time
	for _, t := range f {
		if now.Sub(t) < window {
			out = append(out, t)
		}
	}
	return append(out, now)
}

// Respawn is recovery's answer for a spore that crashed: exactly one of
// Due (it waits for its backoff), OpenBreaker and Start is set.
type Respawn struct {
	// Due: the backoff still runs; the respawn is due then.
	Due time.Time
	// OpenBreaker: this crash fills the window; Failures are its crashes.
	OpenBreaker bool
	// Start: respawn now, a counted crash: Failures are the crash times to
	// keep, NotBefore the earliest time of the next respawn.
	Start     bool
	Failures  []time.Time
	NotBefore time.Time
}

// AfterCrash decides the respawn of a spore that crashed, from its
// recorded crash times and earliest respawn (notBefore); force: a person
// just woke it, so the backoff does not hold it back (the breaker still
// does). pol has its defaults filled.
func AfterCrash(failures []time.Time, notBefore time.Time, pol state.RecoveryPolicy, now time.Time, force bool) Respawn {
	if !force && now.Before(notBefore) {
		return Respawn{Due: notBefore}
	}
	f := RecentFailures(failures, now, time.Duration(pol.BreakerWindow))
	if len(f) >= pol.BreakerFailures {
		return Respawn{OpenBreaker: true, Failures: f}
	}
	return Respawn{Start: true, Failures: f, NotBefore: now.Add(Backoff(pol, len(f)))}
}

// ForgetFailures reports whether a healthy spore's crash times may be
// forgotten: its last crash is HealthyAfter or longer ago.
func ForgetFailures(failures []time.Time, pol state.RecoveryPolicy, now time.Time) bool {
	return len(failures) > 0 && now.Sub(slices.MaxFunc(failures, time.Time.Compare)) >= time.Duration(pol.HealthyAfter)
}
