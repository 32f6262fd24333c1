package policy

import "github.com/sporectl/sporectl/state"

// Admit reports whether a message may be recorded for sp now
// (docs/sleep.md): it is wished awake; or a budget put it to sleep (it
// takes every message, and is woken once within its budget, or for one
// marked over-budget); or it sleeps, and the message may wake it: the
// sender asks to (wake, --wake), or idle put it to sleep and its
// colony's WakeOnMessage lets any message wake such a spore. A spore a
// person put to sleep or stopped is woken only on request. A refused
// message is not recorded (outbox.AsleepError).
//
// colony gives sp's colony's settings; it is called only in the one case
// that turns on them (asleep by idle, no wake asked), so the common
// message costs its caller no read of the settings. Its error is
// returned as it is.
func Admit(sp state.Spore, wake bool, colony func() (state.ColonySettings, error)) (bool, error) {
	switch {
	case TakesEveryMessage(sp), wake:
		return true, nil
	case sp.Desired != state.Paused || sp.DesiredBy != state.ByIdle:
		return false, nil
	}
	c, err := colony()
	if err != nil {
		return false, err
	}
	return c.WakeOnMessage, nil
}

// TakesEveryMessage reports whether sp takes a message without being
// asked to wake: it is wished awake, or a budget put it to sleep (its
// messages wait for its budget). The page's prompt box shows "asleep"
// for any other spore.
func TakesEveryMessage(sp state.Spore) bool {
	return sp.Desired == state.Running || sp.Desired == state.Paused && sp.DesiredBy == state.ByBudget
}
