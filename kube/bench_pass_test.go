package kube_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

const wakeSpores = 100

// BenchmarkWake100: `sporectl wake` of 100 sleeping spores on the real API
// server, as the command does it: one transaction recording desired
// Running for all of them, then the pass over the 100 ids with Heal and
// Force (load, observe, credentials committed, starts 32 at a time —
// claim, Secret, Pod each —, commit). Every op gets a fresh namespace and
// store, made outside the timer. spores/s is 100 over the timed part;
// requests/spore counts the runtime's API calls.
//
//	go test ./kube -run '^$' -bench Wake100 -benchtime 3x -count 5
func BenchmarkWake100(b *testing.B) {
	b.Run("kube", func(b *testing.B) {
		ids := make([]string, wakeSpores)
		for i := range ids {
			ids[i] = fmt.Sprintf("w%03d", i)
		}
		ctx := context.Background()
		dir := b.TempDir()
		var total time.Duration
		var requests, updates int64
		var storeTime time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			e := newEnv(b)
			cfg, counter := kubetest.Counting(e.saCfg)
			rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
			if err != nil {
				b.Fatal(err)
			}
			dir0 := statetest.DirAt(b, filepath.Join(dir, strconv.Itoa(i)), state.Settings{Runtime: "kube"})
			ds := &timedStore{Store: dir0}
			err = ds.Update(ctx, func(tx state.Tx) error {
				for _, id := range ids {
					sp := spore(id)
					sp.Desired = state.Paused
					if err := tx.CreateSpore(ctx, sp); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			ds.reset()
			pass := reconciletest.NewPass(b, ds, reconciletest.WithRuntime(rt), reconciletest.RealClock())
			b.StartTimer()

			start := time.Now()
			// What `wake` records before its pass (cmd/cli setDesired).
			now := time.Now().UTC()
			err = ds.Update(ctx, func(tx state.Tx) error {
				for _, id := range ids {
					sp, err := tx.Spore(ctx, id)
					if err != nil {
						return err
					}
					sp.Desired, sp.Updated = state.Running, now
					sp.Generation++
					if _, err := storetest.Put(ctx, tx, sp); err != nil {
						return err
					}
					if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "wake", At: now, Text: "desired Paused → Running"}}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			out, err := pass.Run(ctx, reconcile.Options{IDs: ids, Heal: true, Force: ids})
			total += time.Since(start)

			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if out.ObserveErr != nil {
				b.Fatal(out.ObserveErr)
			}
			started := 0
			for _, p := range out.Plans {
				if p.StartErr != nil {
					b.Fatalf("start %s: %v", p.Spore.ID, p.StartErr)
				}
				if p.Start {
					started++
				}
			}
			if started != wakeSpores {
				b.Fatalf("the pass started %d spores, want %d", started, wakeSpores)
			}
			if got := len(e.observe(b)); got != wakeSpores {
				b.Fatalf("the API server holds %d spores' pods, want %d", got, wakeSpores)
			}
			requests += counter.Requests()
			storeTime += time.Duration(ds.busy.Load())
			updates += ds.updates.Load()
			_ = ds.Close()
			b.StartTimer()
		}
		b.StopTimer()
		b.ReportMetric(float64(wakeSpores*b.N)/total.Seconds(), "spores/s")
		b.ReportMetric(float64(requests)/float64(wakeSpores*b.N), "requests/spore")
		b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
		b.ReportMetric(storeTime.Seconds()*1000/float64(b.N), "update-ms/op")
	})
}

// timedStore adds up the wall time of the store's Update calls: the
// pass's write transactions are serialized, so their sum is a floor of
// the pass that no API request can lower.
type timedStore struct {
	state.Store
	busy, updates atomic.Int64
}

func (s *timedStore) reset() { s.busy.Store(0); s.updates.Store(0) }

func (s *timedStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	// From the last run of fn to the return: the transaction holding the
	// store (its fsyncs), not the wait for another one to finish.
	var start time.Time
	err := s.Store.Update(ctx, func(tx state.Tx) error {
		start = time.Now()
		return fn(tx)
	})
	s.busy.Add(int64(time.Since(start)))
	s.updates.Add(1)
	return err
}
