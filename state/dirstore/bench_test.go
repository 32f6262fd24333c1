package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// Benchmarks of format §9's cost claims. Figures and how to read them are
// in docs/performance.md; run with `make bench`.

var (
	benchDirOnce sync.Once
	benchDir     string
	fixtures     sync.Map // name → *Store, built once per process
)

func benchRoot(b *testing.B) string {
	benchDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "dirstore-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	})
	return benchDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// historyStore returns a store with one spore holding n events.
func historyStore(b *testing.B, n int) *Store {
	name := "history-" + strconv.Itoa(n)
	if s, ok := fixtures.Load(name); ok {
		return s.(*Store)
	}
	ctx := context.Background()
	s, _, err := Init(ctx, filepath.Join(benchRoot(b), name), state.Settings{Runtime: "local"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("talker")) }); err != nil {
		b.Fatal(err)
	}
	if err := storetest.AppendHistory(ctx, s, "talker", n, 100); err != nil {
		b.Fatal(err)
	}
	fixtures.Store(name, s)
	return s
}

// BenchmarkHistory reads the newest 50 events (what `events --since` and
// `chat` do) and the spore list with heads (what `status` does) on a spore
// with 1,000 and with 1,000,000 events. Both must cost the same.
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		s := historyStore(b, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("since/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				err := s.View(ctx, func(tx state.Tx) error {
					evs, err := tx.Events(ctx, "talker", uint64(n-50), 0)
					if err == nil && len(evs) != 50 {
						err = fmt.Errorf("got %d events", len(evs))
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tail/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				if err := s.View(ctx, func(tx state.Tx) error { _, err := tx.Tail(ctx, "talker", 50); return err }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("status/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				// A fresh Store each time, as a CLI process has.
				fresh, err := Open(ctx, s.root, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := fresh.View(ctx, func(tx state.Tx) error {
					if _, err := tx.Spores(ctx); err != nil {
						return err
					}
					_, err := tx.Heads(ctx)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendBatch appends batches of 1,000 events per transaction,
// each commit fsync'd, and reports events per second.
func BenchmarkAppendBatch(b *testing.B) {
	ctx := context.Background()
	s, _, err := Init(ctx, filepath.Join(b.TempDir(), "store"), state.Settings{Runtime: "local"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("ingest")) }); err != nil {
		b.Fatal(err)
	}
	evs := make([]state.Event, 1000)
	for i := range evs {
		evs[i] = state.Event{Kind: state.KindAgent, BridgeSeq: uint64(i + 1), Line: []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a typical short line of agent output"}]}}`)}
	}
	n := 0
	for b.Loop() {
		if err := s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "ingest", evs); return err }); err != nil {
			b.Fatal(err)
		}
		n += len(evs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStatusFleet reads every spore and head of a 10,000-spore store
// with a fresh handle, as a `status` process does; the PostgreSQL store's
// BenchmarkStatus does the same work.
func BenchmarkStatusFleet(b *testing.B) {
	ctx := context.Background()
	root := filepath.Join(b.TempDir(), "store")
	s, _, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for done := 0; done < 10000; done += 500 {
		err := s.Update(ctx, func(tx state.Tx) error {
			for i := done; i < done+500; i++ {
				sp := storetest.Spore(fmt.Sprintf("spore-%05d", i))
				if err := tx.CreateSpore(ctx, sp); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		fresh, err := Open(ctx, root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		err = fresh.View(ctx, func(tx state.Tx) error {
			sp, err := tx.Spores(ctx)
			if err == nil && len(sp) != 10000 {
				err = fmt.Errorf("got %d spores", len(sp))
			}
			if err != nil {
				return err
			}
			_, err = tx.Heads(ctx)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
}

// BenchmarkCountModelCall counts one model call per op as serve's gateway
// does, its start and then its end (two commits), into a full gateway
// record, in a store of 100 spores; the PostgreSQL store's benchmark of
// the name does the same work.
func BenchmarkCountModelCall(b *testing.B) {
	ctx := context.Background()
	s, _, err := Init(ctx, filepath.Join(b.TempDir(), "store"), state.Settings{Runtime: "local"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Update(ctx, func(tx state.Tx) error {
		for i := range 100 {
			if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("s%03d", i))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := storetest.FillModelRecord(ctx, s, "s042"); err != nil {
		b.Fatal(err)
	}
	storetest.BenchCountModelCall(b, s, "s042")
}
