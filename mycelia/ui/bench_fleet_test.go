package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkFleetPage is GET /ui/ on 1,000 and 10,000 spores (10
// colonies, one in four awake on the fake runtime, each with two days of
// hourly activity and 24 events), on the directory store and on
// PostgreSQL: server time per page (target at 10,000: ≤ 100 ms and
// ≤ 300 KB on the wire; docs/page.md) and the bytes sent, without and
// with gzip, for a load that runs its own pass, one that shares the last
// second's, and a 304, next to the read-only pass the page runs first
// (its floor) in the same run.
//
//	go test -run '^$' -bench FleetPage -count 5 ./mycelia/ui
func BenchmarkFleetPage(b *testing.B) {
	for _, spores := range []int{1000, 10000} {
		b.Run(fmt.Sprint(spores), func(b *testing.B) { benchFleetPage(b, spores) })
	}
}

func benchFleetPage(b *testing.B, spores int) {
	ctx := context.Background()
	stores := map[string]func() state.Store{
		"dir":      func() state.Store { return statetest.Dir(b, state.Settings{Runtime: "local"}) },
		"postgres": func() state.Store { return benchPostgres(b) },
	}
	for _, name := range []string{"dir", "postgres"} {
		b.Run(name, func(b *testing.B) {
			st := stores[name]()
			if st == nil {
				b.Skip("no PostgreSQL")
			}
			h := benchFleet(b, st, spores)
			session := benchSession(b, st)
			// The baseline: the read-only pass the page runs first, alone.
			b.Run("pass", func(b *testing.B) {
				for b.Loop() {
					if _, err := h.Pass.Run(ctx, reconcile.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
			// page: each load its own pass (FleetShare < 0), as the first
			// load after a second; shared: loads within FleetShare of a
			// read, as a burst of them; 304: a load whose If-None-Match
			// names the page it has.
			for _, enc := range []string{"identity", "gzip"} {
				b.Run("page/"+enc, func(b *testing.B) {
					h.FleetShare = -1
					defer func() { h.FleetShare = 0 }()
					var size int
					for b.Loop() {
						size, _ = benchGet(b, h, session, enc, "")
					}
					b.ReportMetric(float64(size), "bytes/page")
				})
			}
			b.Run("shared/gzip", func(b *testing.B) {
				h.FleetShare = time.Hour
				defer func() { h.FleetShare = 0 }()
				var size int
				for b.Loop() {
					size, _ = benchGet(b, h, session, "gzip", "")
				}
				b.ReportMetric(float64(size), "bytes/page")
			})
			b.Run("304", func(b *testing.B) {
				h.FleetShare = time.Hour
				defer func() { h.FleetShare = 0 }()
				_, tag := benchGet(b, h, session, "gzip", "")
				for b.Loop() {
					if size, _ := benchGet(b, h, session, "gzip", tag); size != 0 {
						b.Fatalf("304 with %d bytes", size)
					}
				}
			})
		})
	}
}

// benchGet serves GET /ui/ once and returns the bytes it sent and its
// ETag (a 304 when etag, sent as If-None-Match, names the page).
func benchGet(b *testing.B, h *Handler, session *http.Cookie, enc, etag string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	req.AddCookie(session)
	req.Header.Set("Accept-Encoding", enc)
	want := http.StatusOK
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
		want = http.StatusNotModified
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != want {
		b.Fatalf("GET /ui/: %d %s", w.Code, w.Body)
	}
	return w.Body.Len(), w.Header().Get("ETag")
}

// benchPostgres is a fresh database on the test binary's PostgreSQL
// server (nil without one, failing when CI is set).
func benchPostgres(b *testing.B) state.Store {
	ctx := context.Background()
	srv, err := pgtest.LazyServer()
	if err != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		b.Logf("no PostgreSQL server, its benchmark is left out: %v", err)
		return nil
	}
	_, url, err := srv.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	statetest.CheckOnCleanup(b, st)
	return st
}

// benchFleet fills st with n spores and returns a handler on it, its
// first page already served (the pass that records every health once).
func benchFleet(b *testing.B, st state.Store, n int) *Handler {
	b.Helper()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
	rt := reconciletest.New()
	line := func(v any) json.RawMessage { l, _ := json.Marshal(v); return l }
	for start := 0; start < n; start += 100 {
		var awake []state.Spore
		err := st.Update(ctx, func(tx state.Tx) error {
			for i := start; i < min(start+100, n); i++ {
				sp := state.Spore{
					Wish: state.Wish{ID: fmt.Sprintf("spore-%04d", i), Colony: fmt.Sprintf("colony-%d", i%10), Rank: state.RankSpore, Desired: state.Paused, Created: now.Add(-72 * time.Hour), Updated: now.Add(-72 * time.Hour)},
				}
				if i%4 == 0 {
					sp.Desired = state.Running
					awake = append(awake, sp)
				}
				for hr := 47; hr >= 0; hr-- {
					sp.Activity = append(sp.Activity, state.HourActivity{Hour: now.Truncate(time.Hour).Add(-time.Duration(hr) * time.Hour),
						Turns: int64(hr%3 + 1), ToolCalls: int64((i + hr) % 11), InputTokens: int64(1000 + 37*hr), OutputTokens: int64(200 + hr), CostMicros: int64(1500 * hr)})
				}
				sp.BridgeSeq = 22 // its last agent line's, as ingest leaves it
				if err := tx.CreateSpore(ctx, sp); err != nil {
					return err
				}
				evs := []state.Event{{Kind: state.KindLifecycle, Action: "created", At: sp.Created}}
				for j := range 23 {
					at := now.Add(-time.Duration(23-j) * time.Minute)
					switch j % 3 {
					case 0:
						evs = append(evs, state.Event{Kind: state.KindPrompt, At: at, From: "user:bench", Text: "run the tests and fix what fails"})
					case 1:
						evs = append(evs, state.Event{Kind: state.KindAgent, At: at, BridgeSeq: uint64(j), Line: line(map[string]any{"type": "assistant",
							"message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": "t", "name": "Edit", "input": map[string]any{"file_path": "reconcile/pass.go"}}}}})})
					default:
						evs = append(evs, state.Event{Kind: state.KindAgent, At: at, BridgeSeq: uint64(j), Line: line(map[string]any{"type": "assistant",
							"message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Looking at the failing test first, then the code it covers."}}}})})
					}
				}
				if _, err := tx.Append(ctx, sp.ID, evs); err != nil {
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
	pass := reconciletest.NewPass(b, st, reconciletest.WithFake(rt), reconciletest.At(now))
	h := &Handler{Store: st, Pass: pass, Now: func() time.Time { return now }}
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	req.AddCookie(benchSession(b, st))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("GET /ui/: %d %s", w.Code, w.Body)
	}
	return h
}
