package cli

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkNoopReconcile: a reconcile with nothing to do against status,
// each a fresh command in-process, on a store of 10,000 asleep spores
// whose views are up to date (two reconciles first), dir and PostgreSQL
// (its views in a directory of their own). One op runs each once,
// alternating which goes first; the figures are medians and the ratio
// reconcile/status (the goal: ≤ 1.5×; a no-op pass costs status and
// the views' check that nothing changed).
func BenchmarkNoopReconcile(b *testing.B) {
	const n = 10000
	for _, kind := range []string{"dir", "pg"} {
		b.Run(kind, func(b *testing.B) {
			var loc string
			home := b.TempDir()
			reconcile := []string{"reconcile"}
			if kind == "dir" {
				loc = filepath.Join(b.TempDir(), "store")
				statetest.DirAt(b, loc, applySettings)
			} else {
				_, loc = statetest.Postgres(b, applySettings)
				reconcile = append(reconcile, "--views", filepath.Join(b.TempDir(), "views"))
			}
			args := []string{"create"}
			for i := range n {
				args = append(args, fmt.Sprintf("old-%05d", i))
			}
			namedRun(b, loc, home, args...)
			namedRun(b, loc, home, reconcile...)
			namedRun(b, loc, home, reconcile...)
			commands := [][]string{reconcile, {"status"}}
			took := map[int][]time.Duration{}
			for op := 0; b.Loop(); op++ {
				for k := range 2 {
					i := (k + op) % 2
					t0 := time.Now()
					namedRun(b, loc, home, commands[i]...)
					took[i] = append(took[i], time.Since(t0))
				}
			}
			rec, status := passBenchMedian(took[0]), passBenchMedian(took[1])
			b.ReportMetric(float64(rec.Microseconds())/1000, "reconcile-ms")
			b.ReportMetric(float64(status.Microseconds())/1000, "status-ms")
			b.ReportMetric(rec.Seconds()/status.Seconds(), "ratio")
		})
	}
}
