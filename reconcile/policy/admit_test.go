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
		reads    int // of the colony's settings
	}{
		{"awake", sp(state.Running, state.ByPerson), false, state.Settings{}, true, 0},
		{"asleep by a person", sp(state.Paused, state.ByPerson), false, wakes, false, 0},
		{"asleep by a person, --wake", sp(state.Paused, state.ByPerson), true, state.Settings{}, true, 0},
		{"stopped", sp(state.Stopped, state.ByPerson), false, wakes, false, 0},
		{"stopped, --wake", sp(state.Stopped, state.ByPerson), true, state.Settings{}, true, 0},
		{"asleep by idle, its colony wakes on a message", sp(state.Paused, state.ByIdle), false, wakes, true, 1},
		{"asleep by idle, its colony does not", sp(state.Paused, state.ByIdle), false, state.Settings{}, false, 1},
		{"asleep by budget takes every message", sp(state.Paused, state.ByBudget), false, state.Settings{}, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			reads := 0
			got, err := Admit(c.sp, c.wake, func() (state.ColonySettings, error) {
				reads++
				return c.settings.Colony(c.sp.Colony), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([2]any{c.want, c.reads}, [2]any{got, reads}); diff != "" {
				t.Fatalf("Admit, reads of the settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTakesEveryMessage(t *testing.T) {
	for _, c := range []struct {
		desired state.Desired
		by      state.DesiredBy
		want    bool
	}{
		{state.Running, state.ByPerson, true},
		{state.Running, state.ByIdle, true},
		{state.Paused, state.ByBudget, true},
		{state.Paused, state.ByIdle, false},
		{state.Paused, state.ByPerson, false},
		{state.Stopped, state.ByPerson, false},
	} {
		sp := state.Spore{Wish: state.Wish{ID: "a", Desired: c.desired, DesiredBy: c.by}}
		if diff := cmp.Diff(c.want, TakesEveryMessage(sp)); diff != "" {
			t.Errorf("TakesEveryMessage(%s by %s) (-want +got):\n%s", c.desired, c.by, diff)
		}
	}
}
