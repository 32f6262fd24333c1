package policy

import (
	"time"

	"github.com/sporectl/sporectl/state"
)

// Idle sleep (docs/sleep.md): an awake spore idle for its SleepAfter
// (its own, else its colony's) is put to sleep by a healing pass; the
// [arch] never is (AlwaysOn).

// SleepAfter is how long sp may stay idle before it is put to sleep: its
// own SleepAfter, else its colony's; 0 (never) for the [arch].
func SleepAfter(sp state.Spore, s state.Settings) time.Duration {
	if AlwaysOn(sp) {
		return 0
	}
	if sp.SleepAfter != 0 {
		return time.Duration(sp.SleepAfter)
	}
	return time.Duration(s.Colony(sp.Colony).SleepAfter)
}

// IdleSince is when sp was last active: the later of the last time a
// pass saw it work (ActiveAt) and its wish's last change (a wake, a
// create --wake, a sleep-after set just now).
func IdleSince(sp state.Spore) time.Time {
	if sp.ActiveAt.After(sp.Updated) {
		return sp.ActiveAt
	}
	return sp.Updated
}

// SleepIdle decides whether sp is put to sleep for being idle, and for
// how long it has been: wished awake, not busy, idle for at least its
// SleepAfter. busy is the caller's view of what holds it awake now (it
// is not healthy, is being started or stopped, runs a turn, has
// something queued or just woken by a person).
func SleepIdle(sp state.Spore, s state.Settings, busy bool, now time.Time) (bool, time.Duration) {
	after := SleepAfter(sp, s)
	if after <= 0 || sp.Desired != state.Running || busy {
		return false, 0
	}
	if idle := now.Sub(IdleSince(sp)); idle >= after {
		return true, idle
	}
	return false, 0
}
