package outbox

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

// settingsTx answers Settings alone and counts the reads: admit reads
// nothing else.
type settingsTx struct {
	state.Tx
	s     state.Settings
	reads int
}

func (t *settingsTx) Settings(context.Context) (state.Settings, error) {
	t.reads++
	return t.s, nil
}

func TestAdmit(t *testing.T) {
	settings := state.Settings{}.WithColony("wakes", state.ColonySettings{WakeOnMessage: true})
	spore := func(colony string, d state.Desired, by state.DesiredBy) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: colony, Desired: d, DesiredBy: by}}
	}
	type got struct {
		Admit bool
		Reads int // of the settings
	}
	for _, c := range []struct {
		name string
		sp   state.Spore
		wake bool
		want got
	}{
		{"awake", spore("lab", state.Running, state.ByPerson), false, got{true, 0}},
		{"asleep by budget: takes every message", spore("lab", state.Paused, state.ByBudget), false, got{true, 0}},
		{"asleep by a person", spore("lab", state.Paused, state.ByPerson), false, got{false, 0}},
		{"asleep by a person, --wake", spore("lab", state.Paused, state.ByPerson), true, got{true, 0}},
		{"stopped", spore("lab", state.Stopped, state.ByPerson), false, got{false, 0}},
		{"stopped, --wake", spore("lab", state.Stopped, state.ByPerson), true, got{true, 0}},
		{"asleep by idle, its colony does not wake on a message", spore("lab", state.Paused, state.ByIdle), false, got{false, 1}},
		{"asleep by idle, its colony wakes on a message", spore("wakes", state.Paused, state.ByIdle), false, got{true, 1}},
		{"asleep by idle, --wake", spore("lab", state.Paused, state.ByIdle), true, got{true, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := &settingsTx{s: settings}
			ok, err := admit(context.Background(), tx, c.sp, Message{To: "a", Wake: c.wake})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got{ok, tx.reads}); d != "" {
				t.Errorf("admit (-want +got):\n%s", d)
			}
		})
	}
}
