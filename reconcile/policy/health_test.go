package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOK(t *testing.T) {
	got := map[Health]bool{}
	for _, h := range append(Derived, Starting) {
		got[h] = OK(h)
	}
	want := map[Health]bool{
		Healthy: true, Paused: true, Stopped: true,
		Dead: false, Diverged: false, Suspect: false, Blocked: false, Error: false, Starting: false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("OK (-want +got):\n%s", diff)
	}
}

func TestDerivedNamesEachOnceButStarting(t *testing.T) {
	seen := map[Health]int{}
	for _, h := range Derived {
		seen[h]++
	}
	want := map[Health]int{Healthy: 1, Dead: 1, Diverged: 1, Suspect: 1, Blocked: 1, Paused: 1, Stopped: 1, Error: 1}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Fatalf("Derived (-want +got):\n%s", diff)
	}
}
