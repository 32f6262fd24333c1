package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// benchColonySize is the colony of BenchmarkApply1000.
const benchColonySize = 1000

// writeBenchColony writes a Colony of benchColonySize spores in swarms
// of 10, each with a role and resources of its own, under dir.
func writeBenchColony(b *testing.B, dir string) string {
	var s strings.Builder
	s.WriteString("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: bench}\nspec:\n  defaults: {image: 'ghcr.io/org/spore:1', resources: {memory: 2Gi}}\n  spores:\n")
	for i := range benchColonySize {
		fmt.Fprintf(&s, "  - {id: bench-%04d, swarm: s%d, role: r%d, resources: {cpu: '%d'}}\n", i, i%100, i%10, 1+i%4)
	}
	p := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(p, []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkApply1000 is `sporectl apply -f` of a 1,000-spore colony (the
// whole command in-process: read and check the file, plan, one
// transaction of 1,000 creates with their events) into an empty store,
// and a no-op re-apply of it (a read and a plan, no transaction), on
// both stores. spores/s is the colony's size over the time of one apply.
func BenchmarkApply1000(b *testing.B) {
	settings := state.Settings{Runtime: "local", Image: "img:1", DefaultSpec: state.Spec{CPU: "1", Memory: "1Gi", Storage: "2Gi"}}
	stores := []struct {
		name  string
		fresh func(b *testing.B) string
	}{
		{"dir", func(b *testing.B) string {
			loc := filepath.Join(b.TempDir(), "store")
			statetest.DirAt(b, loc, settings)
			return loc
		}},
		{"pg", func(b *testing.B) string {
			_, url := statetest.Postgres(b, settings)
			return url
		}},
	}
	for _, s := range stores {
		b.Run(s.name+"/create", func(b *testing.B) {
			file := writeBenchColony(b, b.TempDir())
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				loc := s.fresh(b)
				b.StartTimer()
				benchRun(b, loc, "apply", "-f", file)
			}
			b.ReportMetric(float64(benchColonySize*b.N)/b.Elapsed().Seconds(), "spores/s")
		})
		b.Run(s.name+"/noop", func(b *testing.B) {
			file := writeBenchColony(b, b.TempDir())
			loc := s.fresh(b)
			benchRun(b, loc, "apply", "-f", file)
			b.ResetTimer()
			for range b.N {
				benchRun(b, loc, "apply", "-f", file)
			}
			b.ReportMetric(float64(benchColonySize*b.N)/b.Elapsed().Seconds(), "spores/s")
		})
	}
}
