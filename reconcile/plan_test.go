package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestBackoffDoublesToTheCap(t *testing.T) {
	p := state.RecoveryPolicy{}.WithDefaults()
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, backoff(p, n))
	}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("backoff (-want +got):\n%s", diff)
	}
}

func TestPlanTable(t *testing.T) {
	policy := state.RecoveryPolicy{}.WithDefaults()
	alive := Observed{Pod: PodRunning, Bridge: BridgeUp, Pods: 1}
	dead := Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonExited}
	running := func(health string, f func(*state.Spore)) state.Spore {
		s := state.Spore{ID: "a", Desired: state.Running, Health: health}
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
		{"died right after a start: a crash", running(healthStarting, nil), dead, false, func(p *SporePlan) bool { return p.Start && p.Crash }},
		{"not due yet", running("Dead", func(s *state.Spore) { s.NotBefore = t0.Add(time.Second) }), dead, false, func(p *SporePlan) bool { return !p.Start && p.Due.Equal(t0.Add(time.Second)) }},
		{"not due, but a person woke it", running("Dead", func(s *state.Spore) { s.NotBefore = t0.Add(time.Second) }), dead, true, func(p *SporePlan) bool { return p.Start && p.Crash }},
		{"old crashes fall out of the window", running("Dead", func(s *state.Spore) {
			s.Failures = []time.Time{t0.Add(-time.Hour), t0.Add(-50 * time.Minute), t0.Add(-40 * time.Minute), t0.Add(-30 * time.Minute)}
		}), dead, false, func(p *SporePlan) bool { return p.Start && len(p.Failures) == 1 }},
		{"fifth crash in the window opens the breaker", running("Dead", func(s *state.Spore) {
			s.Failures = []time.Time{t0.Add(-4 * time.Minute), t0.Add(-3 * time.Minute), t0.Add(-2 * time.Minute), t0.Add(-time.Minute)}
		}), dead, false, func(p *SporePlan) bool { return !p.Start && p.OpenBreaker }},
		{"breaker open, put to sleep while it runs: stop it", state.Spore{ID: "a", Desired: state.Paused, BreakerOpen: true, Health: "Error"}, alive, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"breaker open: nothing", running("Error", func(s *state.Spore) { s.BreakerOpen = true }), dead, false, func(p *SporePlan) bool { return !p.Start && !p.OpenBreaker }},
		{"runs while asleep: stop", state.Spore{ID: "a", Desired: state.Paused}, alive, false, func(p *SporePlan) bool { return p.Stop }},
		{"asleep with a failed pod: remove it", state.Spore{ID: "a", Desired: state.Paused}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"stopped with a failed pod: remove it", state.Spore{ID: "a", Desired: state.Stopped}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"breaker open, asleep with a failed pod: remove it", state.Spore{ID: "a", Desired: state.Paused, BreakerOpen: true, Health: "Error"}, dead, false, func(p *SporePlan) bool { return p.Stop && !p.Start }},
		{"asleep, its node lost: remove the pod", state.Spore{ID: "a", Desired: state.Paused}, Observed{Pod: PodUnknown, Bridge: BridgeUnknown, Pods: 1}, false, func(p *SporePlan) bool { return p.Stop }},
		{"asleep, observation failed: never act", state.Spore{ID: "a", Desired: state.Paused}, observationFailed(), false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"asleep, terminating: wait", state.Spore{ID: "a", Desired: state.Paused}, Observed{Pod: PodTerminating, Pods: 1}, false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"asleep, no pod: nothing", state.Spore{ID: "a", Desired: state.Paused}, Observed{Pod: PodAbsent}, false, func(p *SporePlan) bool { return !p.Stop && !p.Start }},
		{"two trees: stop them", running("Healthy", nil), Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 2}, false, func(p *SporePlan) bool { return p.Stop }},
		{"terminating: wait", running("Healthy", nil), Observed{Pod: PodTerminating, Pods: 1}, false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
		{"unknown: never act", running("Healthy", nil), observationFailed(), false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
		{"suspect: wait", running("Healthy", nil), Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1}, false, func(p *SporePlan) bool { return !p.Start && !p.Stop }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := PlanInput{Now: t0, Policy: policy, Spores: []state.Spore{c.sp}, Observed: map[string]Observed{"a": c.obs}, Heal: true}
			if c.force {
				in.Force = map[string]bool{"a": true}
			}
			p := Plan(in)[0]
			require.True(t, c.want(p), "plan: %+v", p)
		})
	}
}

func TestRecordSkipsLinesIngestedMeanwhile(t *testing.T) {
	snap := state.Spore{ID: "a", Desired: state.Running, BridgeSeq: 2, Health: "Healthy"}
	p := &SporePlan{Spore: snap, Verdict: Verdict{Effective: Healthy}}
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
