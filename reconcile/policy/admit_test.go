package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

func TestAdmit(t *testing.T) {
	wakes := state.Settings{}.WithColony("lab", state.ColonySettings{WakeOnMessage: true})
	sp := func(d state.Desired, by state.DesiredBy) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Desired: d, DesiredBy: by}}
	}
	for _, c := range []struct {
		name     string
		sp       state.Spore
		wake     bool
		settings state.Settings
		want     bool
	}{
		{"awake", sp(state.Running, state.ByPerson), false, state.Settings{}, true},
		{"asleep by a person", sp(state.Paused, state.ByPerson), false, wakes, false},
		{"asleep by a person, --wake", sp(state.Paused, state.ByPerson), true, state.Settings{}, true},
		{"stopped", sp(state.Stopped, state.ByPerson), false, wakes, false},
		{"stopped, --wake", sp(state.Stopped, state.ByPerson), true, state.Settings{}, true},
		{"asleep by idle, its colony wakes on a message", sp(state.Paused, state.ByIdle), false, wakes, true},
		{"asleep by idle, its colony does not", sp(state.Paused, state.ByIdle), false, state.Settings{}, false},
		{"asleep by budget takes every message", sp(state.Paused, state.ByBudget), false, state.Settings{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Admit(c.sp, c.wake, c.settings)); diff != "" {
				t.Fatalf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}
