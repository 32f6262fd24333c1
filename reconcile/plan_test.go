package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestPlanTable(t *testing.T) {
	recovery := state.RecoveryPolicy{}.WithDefaults()
	alive := Observed{Pod: PodRunning, Bridge: BridgeUp, Pods: 1}
	dead := Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonExited}
	running := func(health policy.Health, f func(*state.Spore)) state.Spore {
		s := state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running}, Status: state.Status{HealthRecord: state.HealthRecord{Health: health}}}
		if f != nil {
			f(&s)
		}
		return s
	}
	cases := []struct {
		name  string
		sp    state.Spore
		obs   Observed
		force bool
		want  func(p *SporePlan) bool
	}{
		{"woken: a first start", running("Paused", nil), Observed{Pod: PodAbsent}, false, func(p *SporePlan) bool { return p.Start && !p.Crash }},
		{"recorded dead before its first start: a first start", running("Dead", func(s *state.Spore) { s.HealthReason = string(ReasonNotStarted) }), Observed{Pod: PodAbsent}, false, func(p *SporePlan) bool { return p.Start && !p.Crash }},
		{"never seen: a first start", running("", nil), Observed{Pod: PodAbsent}, false, func(p *SporePlan) bool { return p.Start && !p.Crash }},
		{"died after running: a crash", running("Healthy", nil), dead, false, func(p *SporePlan) bool { return p.Start && p.Crash && p.NotBefore.Equal(t0.Add(30*time.Second)) }},
		{"died right after a start: a crash", running(policy.Starting, nil), dead, false, func(p *SporePlan) bool { return p.Start && p.Crash }},
		{"not due yet", running("Dead", func(s *state.Spore) { s.NotBefore = t0.Add(time.Second) }), dead, false, func(p *SporePlan) bool { return !p.Start && p.Due.Equal(t0.Add(time.Second)) }},
		{"not due, but a person woke it", running("Dead", func(s *state.Spore) { s.NotBefore = t0.Add(time.Second) }), dead, true, func(p *SporePlan) bool { return p.Start && p.Crash }},
		{"old crashes fall out of the window", running("Dead", func(s *state.Spore) {
			s.Failures = []time.Time{t0.Add(-time.Hour), t0.Add(-50 * time.Minute), t0.Add(-40 * time.Minute), t0.Add(-30 * time.Minute)}
		}), dead, false, func(p *SporePlan) bool { return p.Start && len(p.Failures) == 1 }},
		{"fifth crash in the window opens the breaker", running("Dead", func(s *state.Spore) {
			s.Failures = []time.Time{t0.Add(-4 * time.Minute), t0.Add(-3 * time.Minute), t0.Add(-2 * time.Minute), t0.Add(-time.Minute)}
		}), dead, false, func(p *SporePlan) bool { return !p.Start && p.OpenBreaker }},
		{"breaker open, put to sleep while it runs: stop it", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}, Status: state.Status{HealthRecord: state.HealthRecord{BreakerOpen: true, Health: "Error"}}}, alive, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"breaker open: nothing", running("Error", func(s *state.Spore) { s.BreakerOpen = true }), dead, false, func(p *SporePlan) bool { return !p.Start && !p.OpenBreaker }},
		{"runs while asleep: stop", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, alive, false, func(p *SporePlan) bool { return p.Stop }},
		{"asleep with a failed pod: remove it", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"stopped with a failed pod: remove it", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Stopped}}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"breaker open, asleep with a failed pod: remove it", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}, Status: state.Status{HealthRecord: state.HealthRecord{BreakerOpen: true, Health: "Error"}}}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"asleep, its node lost: remove the pod", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, Observed{Pod: PodUnknown, Bridge: BridgeUnknown, Pods: 1}, false, func(p *SporePlan) bool { return p.Stop }},
		{"asleep, observation failed: never act", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, observationFailed(), false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"asleep, terminating: wait", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, Observed{Pod: PodTerminating, Pods: 1}, false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"asleep, no pod: nothing", state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused}}, Observed{Pod: PodAbsent}, false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"two trees: stop them", running("Healthy", nil), Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 2}, false, func(p *SporePlan) bool { return p.Stop }},
		{"terminating: wait", running("Healthy", nil), Observed{Pod: PodTerminating, Pods: 1}, false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
		{"unknown: never act", running("Healthy", nil), observationFailed(), false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
		{"suspect: wait", running("Healthy", nil), Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1}, false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := PlanInput{Now: t0, Policy: recovery, Spores: []state.Spore{c.sp}, Observed: map[string]Observed{"a": c.obs}, Heal: true}
			if c.force {
				in.Force = map[string]bool{"a": true}
			}
			p := Plan(in)[0]
			require.True(t, c.want(p), "plan: %+v", p)
		})
	}
}

func TestRecordSkipsLinesIngestedMeanwhile(t *testing.T) {
	snap := state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running}, Status: state.Status{HealthRecord: state.HealthRecord{Health: "Healthy"}, IngestRecord: state.IngestRecord{BridgeSeq: 2}}}
	p := &SporePlan{Spore: snap, Verdict: Verdict{Effective: policy.Healthy}}
	p.Ingest = &ingested{base: 2}
	for seq := uint64(3); seq <= 6; seq++ {
		p.Ingest.events = append(p.Ingest.events, state.Event{Kind: state.KindAgent, BridgeSeq: seq})
	}
	fresh := snap
	fresh.BridgeSeq = 4 // another command ingested 3 and 4 after our snapshot
	sp, evs := p.record(fresh, t0)
	require.Equal(t, uint64(6), sp.BridgeSeq)
	var seqs []uint64
	for _, e := range evs {
		seqs = append(seqs, e.BridgeSeq)
	}
	require.Equal(t, []uint64{5, 6}, seqs)

	fresh.BridgeSeq = 9 // and one that went further than we did
	sp, evs = p.record(fresh, t0)
	require.Equal(t, uint64(9), sp.BridgeSeq)
	require.Empty(t, evs)
}

// A spore's life through the passes, on the plan and its record alone:
// each step plans from the record the step before wrote.
func TestOldPodTerminating(t *testing.T) {
	recovery := state.RecoveryPolicy{}.WithDefaults()
	terminating := Observed{Pod: PodTerminating, Bridge: BridgeDown, Pods: 1}
	gone := Observed{Pod: PodAbsent, Bridge: BridgeDown}
	type step struct {
		obs   Observed
		heal  bool
		force bool
		// what the pass decides and records
		start, crash bool
		health       policy.Health
		reason       Reason
	}
	cases := []struct {
		name string
		// the record before the first step
		health   policy.Health
		reason   string
		steps    []step
		restarts int
	}{
		{"sleep, then wake while the old pod terminates: a first start once it is gone", "Paused", "", []step{
			{obs: terminating, heal: true, force: true, health: "Suspect", reason: ReasonOldPodTerminating}, // wake
			{obs: terminating, heal: false, health: "Suspect", reason: ReasonOldPodTerminating},             // status
			{obs: terminating, heal: true, health: "Suspect", reason: ReasonOldPodTerminating},              // reconcile: waits
			{obs: gone, heal: true, start: true, health: policy.Starting},                                   // reconcile: starts
		}, 0},
		{"status sees it gone before any pass starts it: still a first start", "Stopped", "", []step{
			{obs: terminating, heal: true, force: true, health: "Suspect", reason: ReasonOldPodTerminating},
			{obs: gone, heal: false, health: "Dead", reason: ReasonNotStarted},
			{obs: gone, heal: true, start: true, health: policy.Starting},
		}, 0},
		{"the pod of a live spore deleted under it: a crash once it is gone", "Healthy", "", []step{
			{obs: terminating, heal: true, health: "Suspect", reason: ReasonTerminating},
			{obs: terminating, heal: false, health: "Suspect", reason: ReasonTerminating},
			{obs: gone, heal: true, start: true, crash: true, health: policy.Starting},
		}, 1},
		{"just started, its pod deleted: a crash", policy.Starting, "", []step{
			{obs: terminating, heal: true, health: "Suspect", reason: ReasonTerminating},
			{obs: gone, heal: true, start: true, crash: true, health: policy.Starting},
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running, Generation: 1}, Status: state.Status{HealthRecord: state.HealthRecord{Health: c.health, HealthReason: c.reason}}}
			now := t0
			for i, st := range c.steps {
				in := PlanInput{Now: now, Policy: recovery, Spores: []state.Spore{sp}, Observed: map[string]Observed{"a": st.obs}, Heal: st.heal}
				if st.force {
					in.Force = map[string]bool{"a": true}
				}
				p := Plan(in)[0]
				require.Equal(t, st.start, p.Start, "step %d: start", i)
				require.Equal(t, st.crash, p.Crash, "step %d: crash", i)
				require.False(t, p.Stop || p.OpenBreaker, "step %d: %+v", i, p)
				var evs []state.Event
				sp.Status, evs = p.record(sp, now)
				require.Equal(t, st.health, sp.Health, "step %d: recorded health", i)
				require.Equal(t, string(st.reason), sp.HealthReason, "step %d: recorded reason", i)
				for _, e := range evs {
					if !st.crash {
						require.NotEqual(t, "restart", e.Action, "step %d: %s", i, e.Text)
					}
				}
				now = now.Add(time.Second)
			}
			require.Equal(t, c.restarts, sp.Restarts)
			if c.restarts == 0 {
				require.Empty(t, sp.Failures, "no crash counted")
				require.True(t, sp.NotBefore.IsZero(), "no backoff")
				require.False(t, sp.BreakerOpen)
			}
		})
	}
}

// The restart event says what happened; what a next crash would meet is
// said as a condition, never as "not before" (read as: not running yet).
func TestRestartEventSaysWhatHappened(t *testing.T) {
	recovery := state.RecoveryPolicy{}.WithDefaults() // 30s doubling, 5 crashes in 15m
	dead := Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonExited}
	cases := []struct {
		name     string
		failures []time.Time
		policy   func(*state.RecoveryPolicy)
		want     string
	}{
		{"first crash", nil, nil,
			"restart 1 after Exited (1 crash in the window; if it dies again, it is respawned no sooner than 2026-11-01T12:00:30Z)"},
		{"third crash", []time.Time{t0.Add(-2 * time.Minute), t0.Add(-time.Minute)}, nil,
			"restart 1 after Exited (3 crashes in the window; if it dies again, it is respawned no sooner than 2026-11-01T12:02:00Z)"},
		{"one more opens the breaker", []time.Time{t0.Add(-4 * time.Minute), t0.Add(-3 * time.Minute), t0.Add(-2 * time.Minute)}, nil,
			"restart 1 after Exited (4 crashes in the window; if it is found dead again before 2026-11-01T12:11:00Z, its circuit breaker opens)"},
		{"one more would, but its backoff outlasts the window", []time.Time{t0.Add(-14 * time.Minute), t0.Add(-3 * time.Minute), t0.Add(-2 * time.Minute)},
			func(p *state.RecoveryPolicy) { p.BackoffInitial = state.Duration(10 * time.Minute) },
			"restart 1 after Exited (4 crashes in the window; if it dies again, it is respawned no sooner than 2026-11-01T12:10:00Z)"},
		{"no backoff: nothing held back", nil, func(p *state.RecoveryPolicy) { p.BackoffInitial, p.BackoffMax = 0, 0 },
			"restart 1 after Exited (1 crash in the window)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := recovery
			if c.policy != nil {
				c.policy(&pol)
			}
			sp := state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running}, Status: state.Status{HealthRecord: state.HealthRecord{Health: "Healthy", Failures: c.failures}}}
			p := Plan(PlanInput{Now: t0, Policy: pol, Spores: []state.Spore{sp}, Observed: map[string]Observed{"a": dead}, Heal: true})[0]
			require.True(t, p.Start && p.Crash, "%+v", p)
			_, evs := p.record(sp, t0)
			var restart []string
			for _, e := range evs {
				if e.Action == "restart" {
					restart = append(restart, e.Text)
				}
			}
			require.Equal(t, []string{c.want}, restart)
			require.False(t, strings.Contains(c.want, "not before"), "the old wording")
		})
	}
}
