package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkNamedCommands: commands about one spore, each a fresh command
// in-process (its own store handle, as a process has), on stores of
// 1,000 and 10,000 asleep spores, dir and PostgreSQL. One op runs each
// command once on each size, alternating which goes first, so a busy
// machine slows both alike; the figures are medians, with the ratio
// 10k/1k (the goal: ≤ 1.2×, a command about one spore costing the same in
// a fleet of 10,000).
//
//	status ID      a pass over one spore (local runtime: nothing runs)
//	prompt ID T    to an asleep spore: refused (exit 10), nothing written
//	events ID      its log
//
// dir+log is the directory store with a history: after the fleet's create,
// half as many spores again created and deleted (two commands), which
// leaves a commit log that every command decodes as it loads the state;
// before the log was bounded (format §7) it grew with the fleet, to ten
// times as much at 10,000 as at 1,000.
func BenchmarkNamedCommands(b *testing.B) {
	commands := map[string][]string{
		"status":  {"status", "old-00042", "-o", "json"},
		"prompt":  {"prompt", "old-00042", "hello"},
		"events":  {"events", "old-00042"},
		"version": {"version"},
	}
	for _, kind := range []string{"dir", "dir+log", "pg"} {
		b.Run(kind, func(b *testing.B) {
			locs, home := map[int]string{}, b.TempDir()
			for _, n := range []int{1000, 10000} {
				var loc string
				if kind == "pg" {
					_, loc = statetest.Postgres(b, applySettings)
				} else {
					loc = filepath.Join(b.TempDir(), "store")
					statetest.DirAt(b, loc, applySettings)
				}
				args := []string{"create"}
				for i := range n {
					args = append(args, fmt.Sprintf("old-%05d", i))
				}
				benchRun(b, loc, args...)
				if kind == "dir+log" {
					var ids []string
					for i := range n / 2 {
						ids = append(ids, fmt.Sprintf("tmp-%05d", i))
					}
					benchRun(b, loc, append([]string{"create"}, ids...)...)
					benchRun(b, loc, append([]string{"delete"}, ids...)...)
				}
				locs[n] = loc
			}
			for _, name := range []string{"status", "prompt", "events", "version"} {
				b.Run(name, func(b *testing.B) {
					took := map[int][]time.Duration{}
					for op := 0; b.Loop(); op++ {
						order := []int{1000, 10000}
						if op%2 == 1 {
							order = []int{10000, 1000}
						}
						for _, n := range order {
							t0 := time.Now()
							namedRun(b, locs[n], home, commands[name]...)
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

// namedRun is benchRun with a home, taking prompt's refusal (exit 10) as
// its outcome.
func namedRun(b *testing.B, store, home string, args ...string) {
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.Getenv = func(k string) string {
		switch k {
		case EnvStore:
			return store
		case "HOME": // where the local runtime keeps a PostgreSQL store's spores
			return home
		}
		return ""
	}
	code := RunWith(context.Background(), f, args)
	if want := map[bool]int{true: ExitAsleep, false: 0}[args[0] == "prompt"]; code != want {
		b.Fatalf("sporectl %v exited %d, want %d", args, code, want)
	}
}
