package mycelia

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// Benchmarks of serve (docs/performance.md "serve"): the API over a store
// of benchFleetSize spores, on the directory store and on PostgreSQL,
// reached over real HTTP (httptest) by concurrent clients. Fixtures are
// built once per process and kept across the calls the testing package
// makes of a benchmark function (-count, sizing b.N); TestMain removes
// them at the end.
//
//	go test -run '^$' -bench 'Serve' -count 5 ./mycelia/

func TestMain(m *testing.M) {
	code := m.Run()
	benchCleanup.run()
	pgtest.StopLazy()
	os.Exit(code)
}

// benchCleanup holds what process-wide fixtures must undo.
var benchCleanup benchCleanups

type benchCleanups struct {
	mu  sync.Mutex
	fns []func()
}

func addCleanup(fn func()) {
	benchCleanup.mu.Lock()
	benchCleanup.fns = append(benchCleanup.fns, fn)
	benchCleanup.mu.Unlock()
}

func (c *benchCleanups) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

const (
	// benchFleetSize is every spore of the store: the [arch] mycologist
	// who calls, the idle spore with a real bridge, and the rest on fake
	// bridges served over HTTP.
	benchFleetSize = 1000
	// benchClients is how many clients call at once (SetParallelism is
	// per GOMAXPROCS; this is the total).
	benchClients = 8
	benchBridge  = "bench-bridge-token-0123456789abcdef"
	benchText    = "please rerun the unit tests and report what fails"
)

// benchFleet is one store of benchFleetSize spores and serve over it.
type benchFleet struct {
	srv    *Server
	ts     *httptest.Server
	client *http.Client
	token  string   // the [arch]'s
	fakes  []string // spores on fake bridges, the targets of tell
	// senders are the fleet's [colony] mycologists, when it was built
	// with them: senders[k] leads colony c-k, whose spores on fake
	// bridges are targets[k].
	senders []benchSender
	// idle is the spore with a real bridge (the echo agent); accepted
	// gets the time its bridge answered each POST /v1/prompts.
	idle     *bridge.Client
	accepted chan time.Time
}

const (
	benchArch = "arch"
	benchIdle = "idle"
)

// benchSender is a [colony] mycologist of a fleet built with them.
type benchSender struct {
	id, token string
	hash      state.TokenHash
	targets   []string
}

// benchColonySenders is how many [colony] mycologists call in
// tell-senders: one per client.
const benchColonySenders = benchClients

var benchFleets sync.Map // variant (and "/colonies") → *benchFleet

func benchStore(b *testing.B, variant string) state.Store {
	b.Helper()
	ctx := context.Background()
	settings := state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}
	if variant == "dir" {
		dir, err := os.MkdirTemp("", "mycelia-bench-")
		if err != nil {
			b.Fatal(err)
		}
		addCleanup(func() { _ = os.RemoveAll(dir) })
		st, _, err := dirstore.Init(ctx, filepath.Join(dir, "store"), settings, dirstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		addCleanup(func() { _ = st.Close() })
		return st
	}
	srv := pgtest.Lazy(b)
	name, url, err := srv.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := pgstore.Init(ctx, url, settings, pgstore.Options{Tracer: &benchRoundTrips})
	if err != nil {
		b.Fatal(err)
	}
	addCleanup(func() { _ = st.Close(); _ = srv.DropDatabase(context.Background(), name) })
	return st
}

// benchRoundTrips counts what every benchmark's PostgreSQL store sends:
// a statement (BEGIN and COMMIT included), a batch or a COPY is one round
// trip. The benchmarks run one at a time, so a benchmark's share is the
// difference across it.
var benchRoundTrips roundTrips

type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *roundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// startTimedBridge serves a real bridge (the echo agent, a fresh home)
// on loopback HTTP until the benchmarks end; accepted gets the time it
// answered each POST /v1/prompts.
func startTimedBridge(b *testing.B) (client *bridge.Client, accepted chan time.Time, url string) {
	b.Helper()
	home, err := os.MkdirTemp("", "mycelia-bench-bridge-")
	if err != nil {
		b.Fatal(err)
	}
	addCleanup(func() { _ = os.RemoveAll(home) })
	ctx, cancel := context.WithCancel(context.Background())
	bs, err := server.New(ctx, server.Config{Home: home, Token: benchBridge, Agent: agent.Echo{}})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); bs.RunAgent(ctx) }()
	accepted = make(chan time.Time, 1)
	h := bs.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/prompts" {
			select {
			case accepted <- time.Now():
			default:
			}
		}
	}))
	addCleanup(func() { cancel(); <-done; ts.Close(); _ = bs.Close() })
	if client, err = bridge.NewClient(ts.URL, benchBridge, ts.Client()); err != nil {
		b.Fatal(err)
	}
	return client, accepted, ts.URL
}

// directBridge is the bridge of the bridge-direct baseline, of its own
// so that its turns never reach a fleet's store.
var directBridge struct {
	once sync.Once
	f    *benchFleet
	n    atomic.Int64 // prompt ids, unique across calls
}

// mixedRuntime is the fake runtime's bridges over HTTP, and one real
// bridge (Static) for the idle spore.
type mixedRuntime struct {
	reconcile.Runtime
	real *reconciletest.Static
}

func (m mixedRuntime) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	obs, err := m.Runtime.Observe(ctx, ids)
	if err != nil {
		return obs, err
	}
	real, _ := m.real.Observe(ctx, ids)
	for id, po := range real.Spores {
		obs.Spores[id] = po
	}
	return obs, nil
}

func (m mixedRuntime) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	if _, ok := m.real.Endpoints[s.ID]; ok {
		return nil
	}
	return m.Runtime.Start(ctx, s, l)
}

func (m mixedRuntime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	if _, ok := m.real.Endpoints[id]; ok {
		return m.real.Bridge(ctx, id)
	}
	return m.Runtime.Bridge(ctx, id)
}

func buildBenchFleet(b *testing.B, variant string) *benchFleet {
	b.Helper()
	return buildBenchFleetWith(b, variant, false)
}

// buildBenchFleetWith builds the fleet of buildBenchFleet, with, when
// colonies is set, benchColonySenders of its spores [colony] mycologists
// (col-0 of colony c-0, …) in place of as many on fake bridges, so the
// fleet keeps benchFleetSize spores.
func buildBenchFleetWith(b *testing.B, variant string, colonies bool) *benchFleet {
	b.Helper()
	key := variant
	if colonies {
		key += "/colonies"
	}
	if f, ok := benchFleets.Load(key); ok {
		return f.(*benchFleet)
	}
	ctx := context.Background()
	st := benchStore(b, variant)
	f := &benchFleet{}

	var bridgeURL string
	f.idle, f.accepted, bridgeURL = startTimedBridge(b)
	rt := reconciletest.New()
	fh := reconciletest.NewHTTP(rt)
	addCleanup(fh.Close)
	rtm := mixedRuntime{Runtime: fh.Runtime(), real: &reconciletest.Static{Endpoints: map[string]reconcile.BridgeEndpoint{
		benchIdle: {BaseURL: bridgeURL, Token: benchBridge},
	}}}

	now := time.Now().UTC()
	tok, hash, err := state.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	f.token = tok
	var all []state.Spore
	all = append(all, state.Spore{Wish: state.Wish{ID: benchArch, Colony: "c-0", Rank: state.RankArch}}, state.Spore{Wish: state.Wish{ID: benchIdle, Colony: "c-0", Rank: state.RankSpore}})
	if colonies {
		for k := range benchColonySenders {
			tok, hash, err := state.NewToken()
			if err != nil {
				b.Fatal(err)
			}
			id := fmt.Sprintf("col-%d", k)
			f.senders = append(f.senders, benchSender{id: id, token: tok, hash: hash})
			all = append(all, state.Spore{Wish: state.Wish{ID: id, Colony: fmt.Sprintf("c-%d", k), Rank: state.RankColony}})
		}
	}
	for i := range benchFleetSize - 2 - len(f.senders) {
		id := fmt.Sprintf("s-%05d", i)
		f.fakes = append(f.fakes, id)
		if k := i % 10; k < len(f.senders) {
			f.senders[k].targets = append(f.senders[k].targets, id)
		}
		all = append(all, state.Spore{Wish: state.Wish{ID: id, Colony: fmt.Sprintf("c-%d", i%10), Rank: state.RankSpore}})
	}
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range all {
			sp.Desired, sp.Created, sp.Updated = state.Running, now, now
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindPrompt, From: "user:bench", At: now, Text: "hello " + sp.ID}}); err != nil {
				return err
			}
		}
		for _, s := range f.senders {
			if err := tx.SetTokenHash(ctx, s.id, s.hash); err != nil {
				return err
			}
		}
		return tx.SetTokenHash(ctx, benchArch, hash)
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, sp := range all {
		if sp.ID != benchIdle {
			if err := rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_bench"}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// serve keeps one runtime (and its connections) for its life.
	pass := reconciletest.NewPass(b, st, reconciletest.WithRuntime(rtm), reconciletest.RealClock())
	// Settle: every spore observed Healthy before anything is measured.
	if _, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true}); err != nil {
		b.Fatal(err)
	}
	f.srv = &Server{Store: st, Pass: pass, Logger: slog.New(slog.DiscardHandler)}
	f.ts = httptest.NewServer(f.srv)
	addCleanup(f.ts.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * benchClients}
	addCleanup(tr.CloseIdleConnections)
	f.client = &http.Client{Transport: tr, Timeout: time.Minute}

	var list SporeList
	if err := f.call(http.MethodGet, "/api/spores", nil, http.StatusOK, &list); err != nil {
		b.Fatal(err)
	}
	if len(list.Spores) != benchFleetSize-1 {
		b.Fatalf("the [arch] sees %d spores, want %d", len(list.Spores), benchFleetSize-1)
	}
	for _, s := range list.Spores {
		if s.Effective != string(policy.Healthy) {
			b.Fatalf("spore %s is %s (%s) after settling", s.ID, s.Effective, s.Reason)
		}
	}
	benchFleets.Store(key, f)
	return f
}

// call sends one request as the [arch] and checks the status; out, when
// not nil, gets the decoded answer.
func (f *benchFleet) call(method, path string, body []byte, want int, out any) error {
	return f.callAs(benchArch, f.token, method, path, body, want, out)
}

// callAs is call as the spore id with its token.
func (f *benchFleet) callAs(id, token, method, path string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(HeaderSpore, id)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// quantile is the q-quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}

func reportLatencies(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(quantile(ds, 0.50))/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(quantile(ds, 0.99))/float64(time.Millisecond), "p99-ms")
}

// concurrently runs b.N calls of op from benchClients clients and reports
// requests/s, the latency quantiles of one call, and cpu-ms/op: the CPU
// this process spent per call (user + system), which is serve's, the
// clients' and the fake bridges' together (not PostgreSQL's, a process of
// its own): a bound above what serve spends on one call.
func concurrently(b *testing.B, op func(i int) error) {
	b.SetParallelism(max(1, benchClients/runtime.GOMAXPROCS(0)))
	var n atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			i := int(n.Add(1))
			t0 := time.Now()
			if err := op(i); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	reportLatencies(b, all)
}

// tells runs b.N tells through concurrently, call i from and to what
// pick says, each delivered at once; on PostgreSQL it reports the round
// trips a tell sent and the server's CPU per tell (pg-cpu-ms/op).
func (f *benchFleet) tells(b *testing.B, variant string, force bool, pick func(i int) (from benchSender, to string)) {
	body, _ := json.Marshal(TellRequest{Text: benchText, Force: force})
	sent := benchRoundTrips.n.Load()
	pgCPU := serverCPU(b, variant)
	together := f.srv.sends.together.Load()
	concurrently(b, func(i int) error {
		from, to := pick(i)
		var res SendResponse
		if err := f.callAs(from.id, from.token, http.MethodPost, "/spores/"+to+"/prompt", body, http.StatusAccepted, &res); err != nil {
			return err
		}
		if res.State != Delivered {
			return fmt.Errorf("tell from %s to %s: %+v", from.id, res.To, res)
		}
		return nil
	})
	// grouped/op: the share of the tells recorded in a transaction
	// shared with another (sendgroup.go).
	b.ReportMetric(float64(f.srv.sends.together.Load()-together)/float64(b.N), "grouped/op")
	if variant == "postgres" {
		b.ReportMetric(float64(benchRoundTrips.n.Load()-sent)/float64(b.N), "roundtrips/op")
		b.ReportMetric(float64(serverCPU(b, variant)-pgCPU)/float64(time.Millisecond)/float64(b.N), "pg-cpu-ms/op")
	}
}

// serverCPU is the CPU the PostgreSQL server of the benchmarks has spent
// so far (pgtest.Server.CPU), 0 for the directory store: with cpu-ms/op,
// what a call costs the whole machine.
func serverCPU(b *testing.B, variant string) time.Duration {
	if variant != "postgres" {
		return 0
	}
	srv := pgtest.Lazy(b)
	d, err := srv.CPU()
	if err != nil {
		b.Fatalf("the server's CPU: %v", err)
	}
	return d
}

// processCPU is the CPU time this process has spent so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServe: tell (POST /spores/{id}/prompt, with the fallback
// address check, delivered at once to an idle fake bridge over HTTP; a
// different target each call), tell-force (the same without the address
// check), tell-senders (tell from 8 [colony] mycologists in turn, each
// to its own colony, where tell's calls all come from the [arch]) and
// spores (GET /api/spores as the [arch]: 999 spores in reach,
// from one read-only pass over the fleet and one LastEvents, shared by
// the lists of DefaultSporesShare) from benchClients concurrent clients;
// spores-overlap the same with SporesShare < 0 (only the lists asked
// while a pass runs share it: what a list costs when its callers never
// come within a second of each other).
// healthz (one read of the store's settings, no token) is the baseline
// of the same run: what HTTP and one store read cost.
func BenchmarkServe(b *testing.B) {
	for _, variant := range []string{"dir", "postgres"} {
		b.Run("store="+variant, func(b *testing.B) {
			b.Run("healthz", func(b *testing.B) {
				f := buildBenchFleet(b, variant)
				concurrently(b, func(int) error {
					return f.call(http.MethodGet, "/healthz", nil, http.StatusOK, nil)
				})
			})
			for _, force := range []bool{false, true} {
				name := "tell"
				if force {
					name = "tell-force"
				}
				b.Run(name, func(b *testing.B) {
					f := buildBenchFleet(b, variant)
					f.tells(b, variant, force, func(i int) (benchSender, string) {
						return benchSender{id: benchArch, token: f.token}, f.fakes[i%len(f.fakes)]
					})
				})
			}
			// tell-senders: the same tell, from benchColonySenders
			// [colony] mycologists in turn (each to a spore of its own
			// colony, about a hundred in its reach), where tell's come
			// from the one [arch]: a sender's tells take its row lock
			// one after another, so one sender's are serialised.
			b.Run("tell-senders", func(b *testing.B) {
				f := buildBenchFleetWith(b, variant, true)
				f.tells(b, variant, false, func(i int) (benchSender, string) {
					s := f.senders[i%len(f.senders)]
					return s, s.targets[(i/len(f.senders))%len(s.targets)]
				})
			})
			for _, share := range []time.Duration{0, -1} {
				name := "spores"
				if share < 0 {
					name = "spores-overlap"
				}
				b.Run(name, func(b *testing.B) {
					f := buildBenchFleet(b, variant)
					f.srv.SporesShare = share
					defer func() { f.srv.SporesShare = 0 }()
					concurrently(b, func(int) error {
						return f.call(http.MethodGet, "/api/spores", nil, http.StatusOK, nil)
					})
				})
			}
		})
	}
}

// BenchmarkServeTellToBridge: the time from a tell leaving the client to
// the target's real bridge (bridge/server with the echo agent, in
// process over loopback HTTP) answering the POST /v1/prompts that
// delivers it, the target idle (each call waits, untimed, for the echo
// turn before to end). One client; the store holds benchFleetSize spores.
// tell is what `mycologist tell` sends (the fallback address check runs),
// tell-force skips the check; bridge-direct, the baseline of the same
// run, is a prompt posted straight to a bridge of the same kind (what the
// bridge alone costs: its queue fsync'd before it answers). Each call
// waits, untimed, for an echo turn, so the count is given:
//
//	go test -run '^$' -bench ServeTellToBridge -benchtime 200x -count 5 ./mycelia/
func BenchmarkServeTellToBridge(b *testing.B) {
	ctx := context.Background()
	b.Run("bridge-direct", func(b *testing.B) {
		directBridge.once.Do(func() {
			f := &benchFleet{}
			f.idle, f.accepted, _ = startTimedBridge(b)
			directBridge.f = f
		})
		f := directBridge.f
		f.timeToAccept(b, func() error {
			id := fmt.Sprintf("direct-%d", directBridge.n.Add(1))
			a, err := f.idle.Prompt(ctx, bridge.PromptRequest{ID: id, From: "user:bench", Text: benchText})
			if err == nil && a.Duplicate {
				err = fmt.Errorf("prompt %s: the bridge had it already", id)
			}
			return err
		})
	})
	for _, variant := range []string{"dir", "postgres"} {
		b.Run("store="+variant, func(b *testing.B) {
			for _, force := range []bool{false, true} {
				name := "tell"
				if force {
					name = "tell-force"
				}
				body, _ := json.Marshal(TellRequest{Text: benchText, Force: force})
				b.Run(name, func(b *testing.B) {
					f := buildBenchFleet(b, variant)
					f.timeToAccept(b, func() error {
						var res SendResponse
						if err := f.call(http.MethodPost, "/spores/"+benchIdle+"/prompt", body, http.StatusAccepted, &res); err != nil {
							return err
						}
						if res.State != Delivered {
							return fmt.Errorf("tell to the idle spore: %+v", res)
						}
						return nil
					})
				})
			}
		})
	}
}

// timeToAccept runs send b.N times, each once the idle spore's bridge is
// idle, and reports the quantiles of the time from the call to the
// bridge's answer accepting the prompt.
func (f *benchFleet) timeToAccept(b *testing.B, send func() error) {
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		f.waitIdle(b, ctx)
		select {
		case <-f.accepted:
		default:
		}
		b.StartTimer()
		t0 := time.Now()
		if err := send(); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-f.accepted:
			ds = append(ds, at.Sub(t0))
		default:
			b.Fatal("answered, but the bridge took no prompt")
		}
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

// waitIdle waits until the real bridge has nothing running or queued.
func (f *benchFleet) waitIdle(b *testing.B, ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := f.idle.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.State == bridge.StateIdle && st.Queue == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the bridge did not go idle: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
}

// busyLines is how many agent lines the busy target's log holds, all
// inside DedupWindow: what a new tell's repeat check (state.Tx.FindAction)
// must not pay for.
const busyLines = 5000

var busyFleets sync.Map // variant → *benchFleet

// buildBusyFleet is a small store: the [arch], 100 quiet spores (one
// prompt each) and one busy spore whose log holds busyLines agent lines
// ingested from its fake bridge, all awake on in-memory fake bridges.
func buildBusyFleet(b *testing.B, variant string) *benchFleet {
	b.Helper()
	if f, ok := busyFleets.Load(variant); ok {
		return f.(*benchFleet)
	}
	ctx := context.Background()
	st := benchStore(b, variant)
	rt := reconciletest.New()
	f := &benchFleet{}
	tok, hash, err := state.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	f.token = tok
	all := []state.Spore{{Wish: state.Wish{ID: benchArch, Colony: "c-0", Rank: state.RankArch}}, {Wish: state.Wish{ID: "busy", Colony: "c-0", Rank: state.RankSpore}}}
	for i := range 100 {
		id := fmt.Sprintf("quiet-%03d", i)
		f.fakes = append(f.fakes, id)
		all = append(all, state.Spore{Wish: state.Wish{ID: id, Colony: "c-0", Rank: state.RankSpore}})
	}
	now := time.Now().UTC()
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range all {
			sp.Desired, sp.Created, sp.Updated = state.Running, now, now
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindPrompt, From: "user:bench", At: now, Text: "hello " + sp.ID}}); err != nil {
				return err
			}
		}
		return tx.SetTokenHash(ctx, benchArch, hash)
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, sp := range all {
		if err := rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_bench"}}); err != nil {
			b.Fatal(err)
		}
	}
	lines := make([]string, busyLines)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"line %d: reading the repository and running the tests again"}]}}`, i)
	}
	rt.BridgeOf("busy").Write(lines...)
	pass := reconciletest.NewPass(b, st, reconciletest.WithFake(rt), reconciletest.RealClock())
	for range 2 {
		if _, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true}); err != nil {
			b.Fatal(err)
		}
	}
	var head uint64
	if err := st.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "busy")
		head = sp.BridgeSeq
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if head != busyLines {
		b.Fatalf("the busy spore's log holds %d of %d lines", head, busyLines)
	}
	f.ts = httptest.NewServer(&Server{Store: st, Pass: pass, Logger: slog.New(slog.DiscardHandler)})
	addCleanup(f.ts.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	addCleanup(tr.CloseIdleConnections)
	f.client = &http.Client{Transport: tr, Timeout: time.Minute}
	busyFleets.Store(variant, f)
	return f
}

// BenchmarkServeTellBusyTarget: one client's forced tells to an idle
// target whose recent log is short (target=quiet, 100 of them in turn)
// and to one whose log holds busyLines recent agent lines (target=busy,
// as a spore that has worked for a few minutes): the repeat check of a
// new request (outbox.SendOnce's state.Tx.FindAction) looks back to
// DedupWindow, inside the write transaction, and should cost about the
// same for both. quiet is the baseline of the same run.
//
//	go test -run '^$' -bench ServeTellBusyTarget -count 5 ./mycelia/
func BenchmarkServeTellBusyTarget(b *testing.B) {
	body, _ := json.Marshal(TellRequest{Text: benchText, Force: true})
	for _, variant := range []string{"dir", "postgres"} {
		b.Run("store="+variant, func(b *testing.B) {
			for _, target := range []string{"quiet", "busy"} {
				b.Run("target="+target, func(b *testing.B) {
					f := buildBusyFleet(b, variant)
					b.ResetTimer()
					for i := range b.N {
						id := "busy"
						if target == "quiet" {
							id = f.fakes[i%len(f.fakes)]
						}
						var res SendResponse
						if err := f.call(http.MethodPost, "/spores/"+id+"/prompt", body, http.StatusAccepted, &res); err != nil {
							b.Fatal(err)
						}
						if res.State != Delivered {
							b.Fatalf("tell to %s: %+v", id, res)
						}
					}
				})
			}
		})
	}
}

// lastEventFleets holds, per store, benchFleetSize-1 spores with one
// event each: what GET /api/spores reads the last event of.
var lastEventFleets sync.Map // variant → *lastEventFleet

type lastEventFleet struct {
	st  state.Store
	ids []string
}

func buildLastEventFleet(b *testing.B, variant string) *lastEventFleet {
	b.Helper()
	if f, ok := lastEventFleets.Load(variant); ok {
		return f.(*lastEventFleet)
	}
	ctx := context.Background()
	f := &lastEventFleet{st: benchStore(b, variant)}
	now := time.Now().UTC()
	err := f.st.Update(ctx, func(tx state.Tx) error {
		f.ids = f.ids[:0]
		for i := range benchFleetSize - 1 {
			id := fmt.Sprintf("s-%05d", i)
			f.ids = append(f.ids, id)
			sp := state.Spore{Wish: state.Wish{ID: id, Colony: "c-0", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}}
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, From: "user:bench", At: now, Text: "hello " + id}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	lastEventFleets.Store(variant, f)
	return f
}

// BenchmarkSporesLastEvents: the store read of GET /api/spores after its
// pass, the last event of the 999 spores in the [arch]'s reach, in one
// View: read=tail-each is one Tail(1) per spore (what the list did
// before LastEvents; 999 round trips on PostgreSQL), read=last-events one
// LastEvents call (one query). One client, no HTTP.
//
//	go test -run '^$' -bench SporesLastEvents -count 5 ./mycelia/
func BenchmarkSporesLastEvents(b *testing.B) {
	ctx := context.Background()
	reads := []struct {
		name string
		read func(tx state.Tx, ids []string) (int, error)
	}{
		{"tail-each", func(tx state.Tx, ids []string) (int, error) {
			n := 0
			for _, id := range ids {
				evs, err := tx.Tail(ctx, id, 1)
				if err != nil {
					return 0, err
				}
				n += len(evs)
			}
			return n, nil
		}},
		{"last-events", func(tx state.Tx, ids []string) (int, error) {
			m, err := tx.LastEvents(ctx, ids)
			return len(m), err
		}},
	}
	for _, variant := range []string{"dir", "postgres"} {
		b.Run("store="+variant, func(b *testing.B) {
			for _, r := range reads {
				b.Run("read="+r.name, func(b *testing.B) {
					f := buildLastEventFleet(b, variant)
					b.ResetTimer()
					for range b.N {
						err := f.st.View(ctx, func(tx state.Tx) error {
							n, err := r.read(tx, f.ids)
							if err == nil && n != len(f.ids) {
								err = fmt.Errorf("%d last events of %d spores", n, len(f.ids))
							}
							return err
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
