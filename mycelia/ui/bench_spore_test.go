package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// The benchmarks' stores are built once per test binary (a 1,000,000-line
// log takes a while) and removed when it ends.
var fixtures struct {
	mu     sync.Mutex
	dir    string                 // the dir stores' parent directory
	stores map[string]state.Store // by backend
}

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.mu.Lock()
	for _, s := range fixtures.stores {
		_ = s.Close()
	}
	pgtest.StopLazy()
	if fixtures.dir != "" {
		_ = os.RemoveAll(fixtures.dir)
	}
	fixtures.mu.Unlock()
	os.Exit(code)
}

// pgDatabase makes a fresh database on the test binary's PostgreSQL
// server (pgtest.Lazy: started the first time; without one the caller
// skips, or fails when $CI is set).
func pgDatabase(tb testing.TB) string {
	tb.Helper()
	_, url, err := pgtest.Lazy(tb).CreateDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return url
}

// Spores of the benchmark stores and their log lengths.
const (
	benchSmall = 1_000
	benchBig   = 1_000_000
	benchBatch = 10_000 // events per Update while building
)

var benchSpores = map[string]int{"small": benchSmall, "big": benchBig, "watched": 1}

// benchStore returns the store of backend ("dir" or "postgres") holding
// benchSpores, building it the first time.
func benchStore(b *testing.B, backend string) state.Store {
	b.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if s := fixtures.stores[backend]; s != nil {
		return s
	}
	ctx := context.Background()
	settings := state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}
	var s state.Store
	switch backend {
	case "dir":
		if fixtures.dir == "" {
			d, err := os.MkdirTemp("", "sporectl-ui-bench-")
			if err != nil {
				b.Fatal(err)
			}
			fixtures.dir = d
		}
		ds, _, err := dirstore.Init(ctx, filepath.Join(fixtures.dir, "store"), settings, dirstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s = ds
	case "postgres":
		ps, _, err := pgstore.Init(ctx, pgDatabase(b), settings, pgstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s = ps
	}
	start := time.Now()
	for id, n := range benchSpores {
		sp := state.Spore{Wish: state.Wish{ID: id, Colony: "bench", Rank: state.RankSpore, Created: t0, Updated: t0, Desired: state.Paused}}
		if err := s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, sp) }); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < n; done += benchBatch {
			evs := benchEvents(done, min(benchBatch, n-done))
			if err := s.Update(ctx, func(tx state.Tx) error {
				_, err := tx.Append(ctx, id, evs)
				return err
			}); err != nil {
				b.Fatalf("build %s: %v", id, err)
			}
		}
	}
	b.Logf("built the %s store (%d events) in %s", backend, benchBig+benchSmall+1, time.Since(start).Round(time.Millisecond))
	if fixtures.stores == nil {
		fixtures.stores = map[string]state.Store{}
	}
	fixtures.stores[backend] = s
	return s
}

// benchEvents is a conversation's mix: prompts, markdown text, tool calls
// and their results.
func benchEvents(from, n int) []state.Event {
	evs := make([]state.Event, n)
	for i := range evs {
		k := from + i
		switch k % 4 {
		case 0:
			evs[i] = prompt(k%60, "user:alice", "Step "+strconv.Itoa(k)+": fix the next test.")
		case 1:
			evs[i] = text(k%60, "Looking at **step "+strconv.Itoa(k)+"**:\n\n- read `pass_test.go`\n- run the tests\n\n```go\nfunc TestX(t *testing.T) {}\n```")
		case 2:
			evs[i] = toolUse(k%60, "Edit", map[string]any{"file_path": "reconcile/pass_test.go", "old_string": "a", "new_string": "b"})
		default:
			evs[i] = toolResult(k%60, false, "ok")
		}
	}
	return evs
}

func benchHandler(s state.Store) *Handler {
	return &Handler{Store: s, Now: func() time.Time { return t0.Add(time.Hour) }}
}

// BenchmarkSporePage is the first screen of a spore's page (GET
// /ui/spores/ID, the newest DefaultLimit events) of a 1,000-line and a
// 1,000,000-line conversation, on each store: the time per page should not
// grow with the log.
func BenchmarkSporePage(b *testing.B) {
	for _, backend := range []string{"dir", "postgres"} {
		for _, id := range []string{"small", "big"} {
			b.Run(backend+"/"+strconv.Itoa(benchSpores[id]), func(b *testing.B) {
				st := benchStore(b, backend)
				h, session := benchHandler(st), benchSession(b, st)
				var size int
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, "/ui/spores/"+id, nil)
					req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
					req.AddCookie(session)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
					size = w.Body.Len()
				}
				b.ReportMetric(float64(size), "bytes/page")
			})
		}
	}
}

// BenchmarkSSEFanout: 100 browsers follow one spore over real HTTP; each
// iteration appends one event through the store and waits until every
// watcher has it. The lag from the start of the append (its Update, commit
// included) to each watcher reading the event is reported as p50 and p99 over all watchers and
// iterations. Live tails are woken by the store (LISTEN/NOTIFY, the dir
// store's commit-log watch); their safety poll (SafetyPoll) is far longer
// than any lag measured. The baseline, dir/poll, is the same store hidden
// behind a wrapper that cannot say when it changed, so its tails poll it
// every DefaultPoll, as every tail did before the hub.
func BenchmarkSSEFanout(b *testing.B) {
	const watchers = 100
	for _, backend := range []string{"dir", "postgres", "dir/poll"} {
		b.Run(backend, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := benchStore(b, strings.TrimSuffix(backend, "/poll"))
			h := benchHandler(s)
			if strings.HasSuffix(backend, "/poll") {
				h.Store = struct{ state.Store }{s}
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			defer cancel() // before ts.Close: the streams end first
			session := benchSession(b, s)
			var head state.SporeHead
			if err := s.View(ctx, func(tx state.Tx) (err error) { head, err = tx.Head(ctx, "watched"); return }); err != nil {
				b.Fatal(err)
			}
			type got struct {
				seq uint64
				at  time.Time
			}
			recv := make(chan got, watchers*4)
			for range watchers {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/ui/spores/watched/events?after="+strconv.FormatUint(head.LastSeq, 10), nil)
				req.AddCookie(session)
				resp, err := ts.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("stream: %s", resp.Status)
				}
				go func() {
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					sc.Buffer(make([]byte, 64<<10), 1<<20)
					for sc.Scan() {
						if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
							n, _ := strconv.ParseUint(v, 10, 64)
							recv <- got{n, time.Now()}
						}
					}
				}()
			}
			for h.streams.Load() < watchers {
				time.Sleep(time.Millisecond)
			}
			if hb := h.hub(); hb != nil {
				for {
					hb.mu.Lock()
					n := len(hb.subs["watched"])
					hb.mu.Unlock()
					if n == watchers {
						break
					}
					time.Sleep(time.Millisecond)
				}
			} else if !strings.HasSuffix(backend, "/poll") {
				b.Fatalf("the %s store is no Changes", backend)
			}
			var lags []time.Duration
			seq := head.LastSeq
			for b.Loop() {
				seq++
				ev := []state.Event{text(1, "line "+strconv.FormatUint(seq, 10))}
				start := time.Now()
				if err := s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "watched", ev); return err }); err != nil {
					b.Fatal(err)
				}
				for range watchers {
					g := <-recv
					if g.seq != seq {
						b.Fatalf("a watcher got seq %d, want %d", g.seq, seq)
					}
					lags = append(lags, g.at.Sub(start))
				}
			}
			slices.Sort(lags)
			ms := func(q float64) float64 {
				i := min(int(q*float64(len(lags))), len(lags)-1)
				return float64(lags[i].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
