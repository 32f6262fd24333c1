package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkMetrics10000 is one scrape of GET /metrics at 10,000 spores
// on the directory store (docs/performance.md "serve's /metrics"): 50
// colonies, one spore in four awake and idle on the fake runtime, each
// with 48 hours of activity; the scrape's answer through ServeHTTP into
// a recorder (server time, no network), with serve's process counters.
// The baseline is the read-only pass a scrape runs, alone (its floor);
// fleet is the families built from that pass's outcome, without the pass
// or the answer.
//
//	go test -run '^$' -bench Metrics10000 -count 5 ./reconcile/metrics
func BenchmarkMetrics10000(b *testing.B) {
	const spores, colonies = 10_000, 50
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
	st := statetest.Dir(b, state.Settings{Runtime: "local"})
	rt := reconciletest.New()
	for start := 0; start < spores; start += 500 {
		var awake []state.Spore
		err := st.Update(ctx, func(tx state.Tx) error {
			awake = awake[:0]
			for i := start; i < min(start+500, spores); i++ {
				sp := state.Spore{Wish: state.Wish{ID: fmt.Sprintf("spore-%05d", i), Colony: fmt.Sprintf("colony-%02d", i%colonies),
					Rank: state.RankSpore, Desired: state.Paused, Created: now.Add(-72 * time.Hour), Updated: now.Add(-72 * time.Hour)}}
				if i%4 == 0 {
					sp.Desired = state.Running
					awake = append(awake, sp)
				}
				for hr := 47; hr >= 0; hr-- {
					sp.Activity = append(sp.Activity, state.HourActivity{Hour: now.Truncate(time.Hour).Add(-time.Duration(hr) * time.Hour),
						Turns: 2, InputTokens: int64(1000 + 37*hr), OutputTokens: int64(200 + hr), CostMicros: int64(1500 * hr)})
				}
				if err := tx.CreateSpore(ctx, sp); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, sp := range awake {
			if err := rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_bench"}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	op, hash, err := state.NewOperatorToken()
	if err != nil {
		b.Fatal(err)
	}
	err = st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		return tx.PutSettings(ctx, s.WithOperators([]state.OperatorToken{{Name: "prometheus", Hash: hash,
			Session: state.SessionHash(state.OperatorSessionKey(op)), Created: now}}))
	})
	if err != nil {
		b.Fatal(err)
	}
	proc := metrics.NewProcess()
	pass := reconciletest.NewPass(b, st, reconciletest.WithFake(rt), reconciletest.At(now), reconciletest.WithFinished(proc.PassFinished))
	h := metrics.NewHandler(st, pass, proc)
	h.Now = func() time.Time { return now }
	scrape := func(b *testing.B) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, metrics.Path, nil)
		req.Header.Set("Authorization", "Bearer "+op)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
		}
		return w
	}
	// The first pass records every spore's health once (a write); the
	// scrapes measured are the steady state, which writes nothing.
	scrape(b)

	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			if _, err := pass.Run(ctx, reconcile.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fleet", func(b *testing.B) {
		out, err := pass.Run(ctx, reconcile.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			metrics.Fleet(out, now)
		}
	})
	b.Run("scrape", func(b *testing.B) {
		var size, series int
		for b.Loop() {
			w := scrape(b)
			size = w.Body.Len()
			series = strings.Count(w.Body.String(), "\nsporectl_")
		}
		b.ReportMetric(float64(size), "bytes/scrape")
		b.ReportMetric(float64(series), "sporectl-series")
	})
}
