package cli

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sporectl/sporectl/state/statetest"
)

// benchCreateMany is the number of ids of BenchmarkCreateMany's command.
const benchCreateMany = 10000

// BenchmarkCreateMany is `sporectl create ID…` of 10,000 ids (the whole
// command in-process: parse and check the ids, one transaction of 10,000
// creates with their events, print each) into an empty store, on both
// stores. spores/s is the ids over the time of one command.
func BenchmarkCreateMany(b *testing.B) {
	args := []string{"create", "--colony", "bench"}
	for i := range benchCreateMany {
		args = append(args, fmt.Sprintf("bench-%05d", i))
	}
	stores := []struct {
		name  string
		fresh func(b *testing.B) string
	}{
		{"dir", func(b *testing.B) string {
			loc := filepath.Join(b.TempDir(), "store")
			statetest.DirAt(b, loc, applySettings)
			return loc
		}},
		{"pg", func(b *testing.B) string {
			_, url := statetest.Postgres(b, applySettings)
			return url
		}},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				loc := s.fresh(b)
				b.StartTimer()
				benchRun(b, loc, args...)
			}
			b.ReportMetric(float64(benchCreateMany*b.N)/b.Elapsed().Seconds(), "spores/s")
		})
	}
}

// BenchmarkCreateOne is `sporectl create ID` of one id into a store that
// holds 1,000 and 10,000 spores (the colony built one command per spore,
// which is what made building one quadratic: see docs/performance.md).
func BenchmarkCreateOne(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, s := range []string{"dir", "pg"} {
			b.Run(fmt.Sprintf("%s/spores=%d", s, n), func(b *testing.B) {
				var loc string
				if s == "dir" {
					loc = filepath.Join(b.TempDir(), "store")
					statetest.DirAt(b, loc, applySettings)
				} else {
					_, loc = statetest.Postgres(b, applySettings)
				}
				args := []string{"create"}
				for i := range n {
					args = append(args, fmt.Sprintf("old-%05d", i))
				}
				benchRun(b, loc, args...)
				i := 0
				for b.Loop() {
					benchRun(b, loc, "create", fmt.Sprintf("new-%07d", i))
					i++
				}
			})
		}
	}
}
