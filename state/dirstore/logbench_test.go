package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// Benchmarks of what the commit log costs a command about one spore
// (format §7, §9): every command decodes the whole live log when it loads
// the state, so its size, not the snapshot's, is what such a command pays
// for the fleet. Each runs two rules side by side in one process:
//
//	snapshot  the log is compacted once it is as large as the snapshot
//	          (Options.CompactBytes set to the snapshot's size): the rule
//	          before the log was bounded, under which the log of 10,000
//	          spores grows to ten times the log of 1,000
//	default   the rule of format §7 (min/maxCompactBytes)

// logRules are the two rules, as the Options of a store of snapshot size
// snap.
var logRules = []struct {
	name string
	opts func(snap int64) Options
}{
	{"snapshot", func(snap int64) Options { return Options{CompactBytes: max(minCompactBytes, snap)} }},
	{"default", func(int64) Options { return Options{} }},
}

// benchFleet makes a store of n spores named spore-00000…, in
// transactions of 500 creates.
func benchFleet(b *testing.B, root string, n int) {
	ctx := context.Background()
	s, _, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for done := 0; done < n; done += 500 {
		err := s.Update(ctx, func(tx state.Tx) error {
			for i := done; i < min(n, done+500); i++ {
				if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("spore-%05d", i))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// touchWishes commits one transaction that rewrites the wishes of k
// spores from first on (a higher generation, a new time): k rows in the
// commit log.
func touchWishes(ctx context.Context, s *Store, n, first, k int) error {
	return s.Update(ctx, func(tx state.Tx) error {
		for i := range k {
			id := fmt.Sprintf("spore-%05d", (first+i)%n)
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			w := sp.Wish
			w.Generation++
			w.Updated = w.Updated.Add(time.Second)
			if err := tx.PutWish(ctx, w); err != nil {
				return err
			}
		}
		return nil
	})
}

// fillLog commits transactions of 100 rewritten wishes to the store at
// root, opened with opts, until its live commit log is about to reach
// frac of the size at which it is compacted, and returns the log's size.
func fillLog(b *testing.B, root string, n int, opts Options, frac float64) int64 {
	ctx := context.Background()
	s, err := Open(ctx, root, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var last int64
	for first := 0; ; first += 100 {
		l, err := s.loadState(ctx)
		if err != nil {
			b.Fatal(err)
		}
		limit := int64(frac * float64(s.compactThreshold(l)))
		if l.logOff+last > limit {
			return l.logOff
		}
		if err := touchWishes(ctx, s, n, first, 100); err != nil {
			b.Fatal(err)
		}
		after, err := s.loadState(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if after.m.gen != l.m.gen {
			b.Fatalf("the log was compacted while filling it to %.0f%%", frac*100)
		}
		last = after.logOff - l.logOff
	}
}

// snapSize is the size of the store's state.json.
func snapSize(b *testing.B, root string) int64 {
	fi, err := os.Stat(filepath.Join(root, snapshotFile))
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// logStore is one store of logStores and the Options of its rule.
type logStore struct {
	root string
	opts Options
}

// logStores makes, for each rule, stores of 1,000 and 10,000 spores with
// their commit log filled to 90% of what that rule lets it grow to (the
// worst a command meets; on average it meets half), and reports the
// logs' sizes.
func logStores(b *testing.B) map[string]map[int]logStore {
	stores := map[string]map[int]logStore{}
	for _, r := range logRules {
		stores[r.name] = map[int]logStore{}
		for _, n := range []int{1000, 10000} {
			root := filepath.Join(b.TempDir(), fmt.Sprintf("%s-%d", r.name, n))
			benchFleet(b, root, n)
			opts := r.opts(snapSize(b, root))
			logSize := fillLog(b, root, n, opts, 0.9)
			b.Logf("rule %s, %d spores: snapshot %d KiB, commit log %d KiB", r.name, n, snapSize(b, root)>>10, logSize>>10)
			stores[r.name][n] = logStore{root, opts}
		}
	}
	return stores
}

// BenchmarkOneSporeBehindLog reads one spore and its newest events with a
// fresh handle, as `events ID` or `status ID` does, on stores of 1,000
// and 10,000 spores whose commit log is 90% of the way to compaction.
// Each op reads once from each size, alternating which goes first, so a
// busy machine slows both alike; reported are the medians and the ratio
// 10k/1k (issue 39's goal: ≤ 1.2).
func BenchmarkOneSporeBehindLog(b *testing.B) {
	ctx := context.Background()
	stores := logStores(b)
	for _, r := range logRules {
		b.Run("rule="+r.name, func(b *testing.B) {
			took := map[int][]time.Duration{}
			for op := 0; b.Loop(); op++ {
				order := []int{1000, 10000}
				if op%2 == 1 {
					order = []int{10000, 1000}
				}
				for _, n := range order {
					t0 := time.Now()
					st := stores[r.name][n]
					fresh, err := Open(ctx, st.root, st.opts)
					if err != nil {
						b.Fatal(err)
					}
					err = fresh.View(ctx, func(tx state.Tx) error {
						if _, err := tx.Spore(ctx, "spore-00007"); err != nil {
							return err
						}
						_, err := tx.Tail(ctx, "spore-00007", 50)
						return err
					})
					fresh.Close()
					if err != nil {
						b.Fatal(err)
					}
					took[n] = append(took[n], time.Since(t0))
				}
			}
			reportSizes(b, took)
		})
	}
}

// BenchmarkCommitBehindLog is what a writer pays under each rule: one op
// is a fresh handle that rewrites one spore's wish, as a command that
// changes one spore does (loading the state, the commit, and the
// compactions that fall due, each paid by the writer that crosses the
// bound), at 1,000 and at 10,000 spores, from logs 90% of the way to
// compaction.
func BenchmarkCommitBehindLog(b *testing.B) {
	ctx := context.Background()
	stores := logStores(b)
	for _, r := range logRules {
		b.Run("rule="+r.name, func(b *testing.B) {
			took := map[int][]time.Duration{}
			for op := 0; b.Loop(); op++ {
				order := []int{1000, 10000}
				if op%2 == 1 {
					order = []int{10000, 1000}
				}
				for _, n := range order {
					t0 := time.Now()
					st := stores[r.name][n]
					fresh, err := Open(ctx, st.root, st.opts)
					if err != nil {
						b.Fatal(err)
					}
					err = touchWishes(ctx, fresh, n, op, 1)
					fresh.Close()
					if err != nil {
						b.Fatal(err)
					}
					took[n] = append(took[n], time.Since(t0))
				}
			}
			reportSizes(b, took)
		})
	}
}

// reportSizes reports the medians at each size and their ratio, and the
// mean at 10,000 (which, unlike the median, carries the compactions).
func reportSizes(b *testing.B, took map[int][]time.Duration) {
	med := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	mean := func(d []time.Duration) time.Duration {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return sum / time.Duration(len(d))
	}
	small, large := med(took[1000]), med(took[10000])
	b.ReportMetric(float64(small.Microseconds())/1000, "1k-ms")
	b.ReportMetric(float64(large.Microseconds())/1000, "10k-ms")
	b.ReportMetric(float64(mean(took[10000]).Microseconds())/1000, "10k-mean-ms")
	b.ReportMetric(large.Seconds()/small.Seconds(), "ratio")
}

// BenchmarkCompactFleet is the price of the bounded log: one compaction
// of a store of 1,000 and of 10,000 spores (a fresh handle, as a command
// has, whose commit crossed the bound: the snapshot read whole, written
// anew and fsync'd, the sweep's listing of events/), each op one of each.
func BenchmarkCompactFleet(b *testing.B) {
	ctx := context.Background()
	roots := map[int]string{}
	for _, n := range []int{1000, 10000} {
		roots[n] = filepath.Join(b.TempDir(), fmt.Sprint(n))
		benchFleet(b, roots[n], n)
	}
	took := map[int][]time.Duration{}
	for op := 0; b.Loop(); op++ {
		order := []int{1000, 10000}
		if op%2 == 1 {
			order = []int{10000, 1000}
		}
		for _, n := range order {
			fresh, err := Open(ctx, roots[n], Options{})
			if err != nil {
				b.Fatal(err)
			}
			l, err := fresh.loadState(ctx)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			err = fresh.compact(l)
			took[n] = append(took[n], time.Since(t0))
			fresh.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportSizes(b, took)
}
