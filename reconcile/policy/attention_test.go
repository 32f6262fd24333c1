package policy

import (
	"testing"
	"time"
)

func TestNeedsAttention(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		a    After
		want bool
	}{
		{"healthy", After{Health: Healthy}, false},
		{"put to sleep for idleness or budget", After{Health: Paused}, false},
		{"stopped as wished", After{Health: Stopped}, false},
		{"started or restarted by this pass, or woken within budget", After{Health: Starting}, false},
		{"a start that failed", After{Health: Dead, StartFailed: true}, true},
		{"a start that failed, first start", After{Health: Dead, StartFailed: true, NotStarted: true}, true},
		{"dead within its backoff", After{Health: Dead, NotBefore: now.Add(time.Second)}, false},
		{"dead, its backoff over and nothing started", After{Health: Dead, NotBefore: now}, true},
		{"dead, never a backoff and nothing started", After{Health: Dead}, true},
		{"dead, wished awake and not started yet", After{Health: Dead, NotStarted: true}, false},
		{"breaker open or store damage", After{Health: Error}, true},
		{"the agent waits for a person", After{Health: Blocked}, true},
		{"runs while asleep, not stopped", After{Health: Diverged}, true},
		{"coming up one pass after its start", After{Health: Suspect, ComingUp: true, Started: true}, false},
		{"coming up, but not started by the pass before", After{Health: Suspect, ComingUp: true}, true},
		{"suspect for another reason after its start", After{Health: Suspect, Started: true}, true},
		{"suspect", After{Health: Suspect}, true},
		{"a health this version does not know", After{Health: "Molting"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsAttention(tc.a, now); got != tc.want {
				t.Fatalf("NeedsAttention(%+v) = %v, want %v", tc.a, got, tc.want)
			}
		})
	}
}
