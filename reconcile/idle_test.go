package reconcile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

func TestPlanSleepIdle(t *testing.T) {
	idle := Observed{Pod: PodRunning, Bridge: BridgeUp, Pods: 1, Activity: bridge.StateIdle}
	awake := func(f func(*state.Spore)) state.Spore {
		s := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Desired: state.Running,
			SleepAfter: state.Duration(30 * time.Minute), Updated: t0.Add(-time.Hour)}, Status: state.Status{HealthRecord: state.HealthRecord{Health: policy.Healthy}}}
		if f != nil {
			f(&s)
		}
		return s
	}
	withObs := func(f func(*Observed)) Observed { o := idle; f(&o); return o }
	lab := state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(10 * time.Minute)})
	cases := []struct {
		name     string
		sp       state.Spore
		obs      Observed
		settings state.Settings
		pending  bool
		active   bool
		force    bool
		heal     bool
		sleep    bool
		idle     time.Duration
	}{
		{name: "idle long enough: sleep", sp: awake(nil), obs: idle, heal: true, sleep: true, idle: time.Hour},
		{name: "idle exactly its sleep-after: sleep", sp: awake(func(s *state.Spore) { s.Updated = t0.Add(-30 * time.Minute) }), obs: idle, heal: true, sleep: true, idle: 30 * time.Minute},
		{name: "idle, not long enough since it was active", sp: awake(func(s *state.Spore) { s.ActiveAt = t0.Add(-29 * time.Minute) }), obs: idle, heal: true},
		{name: "idle, not long enough since its wish changed (woken)", sp: awake(func(s *state.Spore) { s.Updated = t0.Add(-time.Minute) }), obs: idle, heal: true},
		{name: "active long ago: sleep, idle measured from it", sp: awake(func(s *state.Spore) { s.ActiveAt = t0.Add(-45 * time.Minute) }), obs: idle, heal: true, sleep: true, idle: 45 * time.Minute},
		{name: "a prompt queued in the outbox: not idle", sp: awake(nil), obs: idle, pending: true, heal: true},
		{name: "a prompt queued at the bridge: not idle", sp: awake(nil), obs: withObs(func(o *Observed) { o.Queue = 1 }), heal: true},
		{name: "a turn running: not idle", sp: awake(nil), obs: withObs(func(o *Observed) { o.Activity = bridge.StateWorking }), heal: true},
		{name: "the bridge not asked what it does: not idle", sp: awake(nil), obs: withObs(func(o *Observed) { o.Activity = "" }), heal: true},
		{name: "blocked on a person: not healthy, left awake", sp: awake(nil), obs: withObs(func(o *Observed) { o.Activity = bridge.StateBlocked }), heal: true},
		{name: "lines ingested in this pass: not idle", sp: awake(nil), obs: idle, active: true, heal: true},
		{name: "just woken by a person: not idle", sp: awake(nil), obs: idle, force: true, heal: true},
		{name: "a read-only pass never sleeps a spore", sp: awake(nil), obs: idle},
		{name: "the [arch] never sleeps", sp: awake(func(s *state.Spore) { s.Rank, s.SleepAfter = state.RankArch, 0 }), obs: idle, settings: state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(time.Minute)}), heal: true},
		{name: "no sleep-after anywhere: never", sp: awake(func(s *state.Spore) { s.SleepAfter = 0 }), obs: idle, heal: true},
		{name: "the colony's sleep-after when its own is 0", sp: awake(func(s *state.Spore) { s.SleepAfter, s.Updated = 0, t0.Add(-11*time.Minute) }), obs: idle, settings: lab, heal: true, sleep: true, idle: 11 * time.Minute},
		{name: "its own sleep-after over the colony's", sp: awake(func(s *state.Spore) { s.Updated = t0.Add(-11 * time.Minute) }), obs: idle, settings: lab, heal: true},
		{name: "asleep already: nothing", sp: awake(func(s *state.Spore) { s.Desired, s.Health = state.Paused, policy.Paused }), obs: Observed{Pod: PodAbsent}, heal: true},
		{name: "dead: started, not slept", sp: awake(func(s *state.Spore) { s.Health = "" }), obs: Observed{Pod: PodAbsent}, heal: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := PlanInput{Now: t0, Policy: state.RecoveryPolicy{}.WithDefaults(), Spores: []state.Spore{c.sp},
				Observed: map[string]Observed{"a": c.obs}, Heal: c.heal, Deliver: true, Settings: c.settings}
			if c.pending {
				in.Pending = map[string][]state.OutboxEntry{"a": {{ID: "p-1", Spore: "a"}}}
			}
			if c.active {
				in.Active = map[string]bool{"a": true}
			}
			if c.force {
				in.Force = map[string]bool{"a": true}
			}
			p := Plan(in)[0]
			require.Equal(t, c.sleep, p.SleepIdle)
			if c.sleep {
				require.Equal(t, c.idle, p.Idle)
				require.Empty(t, p.Deliver, "nothing is delivered to a spore about to sleep")
				require.False(t, p.Stop, "the stop follows the recorded sleep, not the plan")
			}
		})
	}
}

func TestSleptByAndReason(t *testing.T) {
	s := state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute)})
	sp := func(d state.Desired, by state.DesiredBy) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Desired: d, DesiredBy: by}}
	}
	for _, c := range []struct {
		name       string
		sp         state.Spore
		v          Verdict
		by, reason string
	}{
		{"idle", sp(state.Paused, state.ByIdle), Verdict{Effective: policy.Paused}, "idle", "asleep: idle for 30m0s"},
		{"a person", sp(state.Paused, state.ByPerson), Verdict{Effective: policy.Paused}, "person", "asleep: by a person"},
		{"budget, within it again", sp(state.Paused, state.ByBudget), Verdict{Effective: policy.Paused}, "budget", "asleep: by budget, within it again (the next message wakes it)"},
		{"idle, still running: the verdict's reason", sp(state.Paused, state.ByIdle), Verdict{Effective: policy.Diverged, Text: "Running while desired Paused"}, "idle", "Running while desired Paused"},
		{"awake", sp(state.Running, state.ByPerson), Verdict{Effective: policy.Healthy}, "", ""},
		{"stopped", sp(state.Stopped, state.ByPerson), Verdict{Effective: policy.Stopped}, "", ""},
	} {
		by, reason := sleptBy(c.sp, s, c.v, "")
		require.Equal(t, c.by, by, c.name)
		require.Equal(t, c.reason, reason, c.name)
	}
	by, reason := sleptBy(sp(state.Paused, state.ByBudget), s, Verdict{Effective: policy.Paused}, "24/20 tokens today")
	require.Equal(t, "budget", by)
	require.Equal(t, "asleep: over budget (24/20 tokens today)", reason)
}
