package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

func TestSleepAfter(t *testing.T) {
	s := state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(time.Hour)})
	sp := func(r state.Rank, colony string, own time.Duration) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: colony, Rank: r, SleepAfter: state.Duration(own)}}
	}
	for _, c := range []struct {
		name string
		sp   state.Spore
		want time.Duration
	}{
		{"the colony's", sp(state.RankSpore, "lab", 0), time.Hour},
		{"its own first", sp(state.RankSpore, "lab", 10*time.Minute), 10 * time.Minute},
		{"the [arch] never", sp(state.RankArch, "lab", 0), 0},
		{"no setting: never", sp(state.RankSpore, "ops", 0), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, SleepAfter(c.sp, s)); diff != "" {
				t.Fatalf("SleepAfter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdleSince(t *testing.T) {
	for _, c := range []struct {
		name            string
		active, updated time.Time
		want            time.Time
	}{
		{"last seen working", t0, t0.Add(-time.Hour), t0},
		{"its wish changed since", t0.Add(-time.Hour), t0, t0},
		{"never seen working", time.Time{}, t0, t0},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := state.Spore{Wish: state.Wish{Updated: c.updated}, Status: state.Status{IngestRecord: state.IngestRecord{ActiveAt: c.active}}}
			if diff := cmp.Diff(c.want, IdleSince(sp)); diff != "" {
				t.Fatalf("IdleSince (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSleepIdle(t *testing.T) {
	type verdict struct {
		Sleep bool
		Idle  time.Duration
	}
	s := state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute)})
	awake := func(r state.Rank, d state.Desired, idle time.Duration) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: r, Desired: d, Updated: t0.Add(-idle)}}
	}
	for _, c := range []struct {
		name string
		sp   state.Spore
		busy bool
		want verdict
	}{
		{"idle long enough", awake(state.RankSpore, state.Running, 31*time.Minute), false, verdict{true, 31 * time.Minute}},
		{"idle exactly its sleep-after", awake(state.RankSpore, state.Running, 30*time.Minute), false, verdict{true, 30 * time.Minute}},
		{"not yet", awake(state.RankSpore, state.Running, 29*time.Minute), false, verdict{}},
		{"busy", awake(state.RankSpore, state.Running, time.Hour), true, verdict{}},
		{"asleep already", awake(state.RankSpore, state.Paused, time.Hour), false, verdict{}},
		{"the [arch] never", awake(state.RankArch, state.Running, time.Hour), false, verdict{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got verdict
			got.Sleep, got.Idle = SleepIdle(c.sp, s, c.busy, t0)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("SleepIdle (-want +got):\n%s", diff)
			}
		})
	}
}
