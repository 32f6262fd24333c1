package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkSelectSpores: what choosing spores by a selector costs, on
// stores of 1,000 and 10,000 asleep spores (dir and PostgreSQL), ten of
// them in colony x. As BenchmarkNamedCommands, one op runs each size
// once, alternating which goes first; the figures are medians and the
// ratio 10k/1k.
//
//	resolve     resolveTargets(-l colony=x) on an open store: the one
//	            listing read a selection costs (it grows with the fleet)
//	sleep-l     `sleep -l colony=x`, a fresh command in-process
//	sleep-ids   `sleep x-0 … x-9`: the same ten named, for comparison
//	list-l      `list -l colony=x`: the same listing read, with no pass
func BenchmarkSelectSpores(b *testing.B) {
	var ten []string
	for i := range 10 {
		ten = append(ten, fmt.Sprintf("x-%d", i))
	}
	for _, kind := range []string{"dir", "pg"} {
		b.Run(kind, func(b *testing.B) {
			locs, stores, home := map[int]string{}, map[int]state.Store{}, b.TempDir()
			for _, n := range []int{1000, 10000} {
				var loc string
				if kind == "dir" {
					loc = filepath.Join(b.TempDir(), "store")
					statetest.DirAt(b, loc, applySettings)
				} else {
					_, loc = statetest.Postgres(b, applySettings)
				}
				args := []string{"create"}
				for i := range n - len(ten) {
					args = append(args, fmt.Sprintf("old-%05d", i))
				}
				benchRun(b, loc, args...)
				benchRun(b, loc, append([]string{"create", "--colony", "x"}, ten...)...)
				f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
				st, err := f.OpenStore(context.Background(), loc)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				locs[n], stores[n] = loc, st
			}
			f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
			steps := map[string]func(n int){
				"resolve": func(n int) {
					ids, ok, err := resolveTargets(context.Background(), f, stores[n], nil, targetFlags{Selector: "colony=x"})
					if err != nil || !ok || len(ids) != len(ten) {
						b.Fatalf("resolve: %v %v %v", ids, ok, err)
					}
				},
				"sleep-l":   func(n int) { namedRun(b, locs[n], home, "sleep", "-l", "colony=x") },
				"sleep-ids": func(n int) { namedRun(b, locs[n], home, append([]string{"sleep"}, ten...)...) },
				"list-l":    func(n int) { namedRun(b, locs[n], home, "list", "-l", "colony=x") },
			}
			for _, name := range []string{"resolve", "sleep-l", "sleep-ids", "list-l"} {
				b.Run(name, func(b *testing.B) {
					took := map[int][]time.Duration{}
					for op := 0; b.Loop(); op++ {
						order := []int{1000, 10000}
						if op%2 == 1 {
							order = []int{10000, 1000}
						}
						for _, n := range order {
							t0 := time.Now()
							steps[name](n)
							took[n] = append(took[n], time.Since(t0))
						}
					}
					small, large := passBenchMedian(took[1000]), passBenchMedian(took[10000])
					b.ReportMetric(float64(small.Microseconds())/1000, "1k-ms")
					b.ReportMetric(float64(large.Microseconds())/1000, "10k-ms")
					b.ReportMetric(large.Seconds()/small.Seconds(), "ratio")
				})
			}
		})
	}
}
