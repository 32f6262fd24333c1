package digest

import (
	"testing"
	"time"
)

// Sequences of values that differ, in a value or a kind, or that split
// the same bytes differently, digest differently; the same values the
// same, after a Reset too.
func TestDistinctSequencesDigestDistinctly(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 5, time.UTC)
	seqs := map[string]func(d *Digest){
		"nothing":     func(d *Digest) {},
		"ab":          func(d *Digest) { d.Str("ab") },
		"a,b":         func(d *Digest) { d.Str("a"); d.Str("b") },
		"ab,":         func(d *Digest) { d.Str("ab"); d.Str("") },
		"uint 1, 2":   func(d *Digest) { d.Uint(1); d.Uint(2) },
		"uint 2, 1":   func(d *Digest) { d.Uint(2); d.Uint(1) },
		"int 1, 1":    func(d *Digest) { d.Int(1); d.Int(1) },
		"int -1, 1":   func(d *Digest) { d.Int(-1); d.Int(1) },
		"true, true":  func(d *Digest) { d.Bool(true); d.Bool(true) },
		"true, false": func(d *Digest) { d.Bool(true); d.Bool(false) },
		"uint 1":      func(d *Digest) { d.Uint(1) },
		"int -1":      func(d *Digest) { d.Int(-1) },
		"str \x01":    func(d *Digest) { d.Str("\x01") },
		"zero time":   func(d *Digest) { d.Time(time.Time{}) },
		"t0":          func(d *Digest) { d.Time(t0) },
		"t0 + 1ns":    func(d *Digest) { d.Time(t0.Add(1)) },
		"t0 + 1s":     func(d *Digest) { d.Time(t0.Add(time.Second)) },
		"long string": func(d *Digest) { d.Str(string(make([]byte, 10<<10))) },
	}
	seen := map[string]string{}
	d := New()
	for name, add := range seqs {
		d.Reset()
		add(d)
		sum := d.Sum()
		if len(sum) != 32 {
			t.Fatalf("%s: %q is not 32 hex digits", name, sum)
		}
		if other, ok := seen[sum]; ok {
			t.Errorf("%s and %s digest the same", name, other)
		}
		seen[sum] = name
		again := New()
		add(again)
		if got := again.Sum(); got != sum {
			t.Errorf("%s: %s, then %s", name, sum, got)
		}
	}
	// A time in another location is the same instant.
	a, b := New(), New()
	a.Time(t0)
	b.Time(t0.In(time.FixedZone("x", 3600)))
	if a.Sum() != b.Sum() {
		t.Error("the same instant in two locations digests differently")
	}
}
