package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/storetest"
)

// Benchmarks run against the package's test server (fsync on, defaults
// otherwise). Fixtures are built once per process: the testing package
// calls a benchmark function several times while it sizes b.N.
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./state/pgstore/

var fixtures sync.Map // name → *pgstore.Store

func fixture(b *testing.B, name string, build func(*pgstore.Store)) *pgstore.Store {
	b.Helper()
	if s, ok := fixtures.Load(name); ok {
		return s.(*pgstore.Store)
	}
	ctx := context.Background()
	_, url, err := pgtest.Shared(b).CreateDatabase(ctx)
	require.NoError(b, err)
	s, _, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{})
	require.NoError(b, err)
	build(s)
	fixtures.Store(name, s)
	return s
}

// agentLines is a batch shaped like ingest: agent JSON lines of a few
// hundred bytes.
func agentLines(n, from int) []state.Event {
	evs := make([]state.Event, n)
	for i := range evs {
		evs[i] = state.Event{Kind: state.KindAgent, BridgeSeq: uint64(from + i), Line: []byte(fmt.Sprintf(
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"line %d: reading the repository and running the tests again to see whether the fix holds"}]},"session_id":"0b5e-4c1d"}`, from+i))}
	}
	return evs
}

func appendBatches(b *testing.B, s state.Store, id string, total, batch int) {
	b.Helper()
	ctx := context.Background()
	for done := 0; done < total; done += batch {
		require.NoError(b, s.Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, id, agentLines(batch, done))
			return err
		}))
	}
}

// BenchmarkIngest appends batches of 1,000 agent lines, one Update each
// (COPY inside), the way ingest saves what a bridge returned.
func BenchmarkIngest(b *testing.B) {
	s := fixture(b, "ingest", func(s *pgstore.Store) {
		ctx := context.Background()
		require.NoError(b, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("busy")) }))
	})
	const batch = 1000
	evs := agentLines(batch, 0)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "busy", evs); return err })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStatus reads every spore and every head in one View, what
// `status` does, over 10,000 spores.
func BenchmarkStatus(b *testing.B) {
	const spores = 10000
	s := fixture(b, "status", func(s *pgstore.Store) {
		ctx := context.Background()
		require.NoError(b, s.Update(ctx, func(tx state.Tx) error {
			for i := 0; i < spores; i++ {
				if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("spore-%05d", i))); err != nil {
					return err
				}
			}
			return nil
		}))
	})
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.View(ctx, func(tx state.Tx) error {
			sp, err := tx.Spores(ctx)
			if err != nil {
				return err
			}
			h, err := tx.Heads(ctx)
			if len(sp) != spores || len(h) != spores {
				return fmt.Errorf("read %d spores and %d heads, want %d", len(sp), len(h), spores)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}

// BenchmarkTail reads the end of a conversation with 1,000,000 events in
// the table (one spore holds them all: the worst case for a scan).
func BenchmarkTail(b *testing.B) {
	const events = 1_000_000
	s := fixture(b, "tail", func(s *pgstore.Store) {
		ctx := context.Background()
		require.NoError(b, s.Update(ctx, func(tx state.Tx) error {
			for _, id := range []string{"long", "other"} {
				if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
					return err
				}
			}
			return nil
		}))
		appendBatches(b, s, "long", events, 10000)
	})
	ctx := context.Background()
	b.Run("Tail50", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			err := s.View(ctx, func(tx state.Tx) error {
				evs, err := tx.Tail(ctx, "long", 50)
				if err == nil && (len(evs) != 50 || evs[49].Seq != events) {
					err = fmt.Errorf("tail ends at %d with %d events", evs[len(evs)-1].Seq, len(evs))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	b.Run("EventsAfterLast50", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			err := s.View(ctx, func(tx state.Tx) error {
				h, err := tx.Head(ctx, "long")
				if err != nil {
					return err
				}
				evs, err := tx.Events(ctx, "long", h.LastSeq-50, 0)
				if err == nil && len(evs) != 50 {
					err = fmt.Errorf("read %d events after %d", len(evs), h.LastSeq-50)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}

// BenchmarkCountModelCall counts one model call per op as serve's gateway
// does, its start and then its end (two transactions), into a full
// gateway record, in a store of 100 spores.
func BenchmarkCountModelCall(b *testing.B) {
	s := fixture(b, "gateway", func(s *pgstore.Store) {
		ctx := context.Background()
		require.NoError(b, s.Update(ctx, func(tx state.Tx) error {
			for i := range 100 {
				if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("s%03d", i))); err != nil {
					return err
				}
			}
			return nil
		}))
		require.NoError(b, storetest.FillModelRecord(ctx, s, "s042"))
	})
	storetest.BenchCountModelCall(b, s, "s042")
}
