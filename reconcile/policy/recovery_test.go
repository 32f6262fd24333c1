package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestBackoff(t *testing.T) {
	def := state.RecoveryPolicy{}.WithDefaults()
	tight := state.RecoveryPolicy{BackoffInitial: state.Duration(time.Second), BackoffMax: state.Duration(3 * time.Second)}.WithDefaults()
	for _, c := range []struct {
		name string
		pol  state.RecoveryPolicy
		want []time.Duration // after the 1st, 2nd, … crash
	}{
		{"the defaults double from 30s to the 10m cap", def,
			[]time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}},
		{"a cap that is no double of the start is still the cap", tight,
			[]time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []time.Duration
			for n := 1; n <= len(c.want); n++ {
				got = append(got, Backoff(c.pol, n))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("Backoff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecentFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		f    []time.Time
		want []time.Time
	}{
		{"none: now alone", nil, []time.Time{t0}},
		{"inside the window kept, now added", []time.Time{t0.Add(-time.Minute)}, []time.Time{t0.Add(-time.Minute), t0}},
		{"at the window's edge and before dropped", []time.Time{t0.Add(-20 * time.Minute), t0.Add(-15 * time.Minute), t0.Add(-14 * time.Minute)},
			[]time.Time{t0.Add(-14 * time.Minute), t0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, RecentFailures(c.f, t0, 15*time.Minute)); diff != "" {
				t.Fatalf("RecentFailures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterCrash(t *testing.T) {
	pol := state.RecoveryPolicy{BreakerFailures: 3}.WithDefaults()
	ago := func(d time.Duration) time.Time { return t0.Add(-d) }
	for _, c := range []struct {
		name      string
		failures  []time.Time
		notBefore time.Time
		force     bool
		want      Respawn
	}{
		{"a first crash: respawned now, the next after 30s", nil, time.Time{}, false,
			Respawn{Start: true, Failures: []time.Time{t0}, NotBefore: t0.Add(30 * time.Second)}},
		{"a second crash in the window: the backoff doubles", []time.Time{ago(time.Minute)}, ago(30 * time.Second), false,
			Respawn{Start: true, Failures: []time.Time{ago(time.Minute), t0}, NotBefore: t0.Add(time.Minute)}},
		{"the backoff still runs: due then", []time.Time{ago(time.Minute)}, t0.Add(time.Second), false,
			Respawn{Due: t0.Add(time.Second)}},
		{"a person woke it: the backoff does not hold it", []time.Time{ago(time.Minute)}, t0.Add(time.Second), true,
			Respawn{Start: true, Failures: []time.Time{ago(time.Minute), t0}, NotBefore: t0.Add(time.Minute)}},
		{"the crash that fills the window opens the breaker", []time.Time{ago(2 * time.Minute), ago(time.Minute)}, time.Time{}, false,
			Respawn{OpenBreaker: true, Failures: []time.Time{ago(2 * time.Minute), ago(time.Minute), t0}}},
		{"the breaker holds even when a person woke it", []time.Time{ago(2 * time.Minute), ago(time.Minute)}, t0.Add(time.Minute), true,
			Respawn{OpenBreaker: true, Failures: []time.Time{ago(2 * time.Minute), ago(time.Minute), t0}}},
		{"crashes out of the window do not count", []time.Time{ago(time.Hour), ago(50 * time.Minute)}, time.Time{}, false,
			Respawn{Start: true, Failures: []time.Time{t0}, NotBefore: t0.Add(30 * time.Second)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, AfterCrash(c.failures, c.notBefore, pol, t0, c.force)); diff != "" {
				t.Fatalf("AfterCrash (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForgetFailures(t *testing.T) {
	pol := state.RecoveryPolicy{}.WithDefaults() // healthy after 10m
	for _, c := range []struct {
		name     string
		failures []time.Time
		want     bool
	}{
		{"nothing to forget", nil, false},
		{"the last crash 10m ago", []time.Time{t0.Add(-time.Hour), t0.Add(-10 * time.Minute)}, true},
		{"the last crash too recent, whatever the order", []time.Time{t0.Add(-time.Minute), t0.Add(-time.Hour)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, ForgetFailures(c.failures, pol, t0)); diff != "" {
				t.Fatalf("ForgetFailures (-want +got):\n%s", diff)
			}
		})
	}
}
