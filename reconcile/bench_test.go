package reconcile_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// Benchmarks of the pass (docs/performance.md "The pass"). Fixtures are
// built once per process and kept across the calls the testing package
// makes of a benchmark function (-count, sizing b.N); TestMain removes
// them at the end.
//
//	go test -run '^$' -bench 'ReconcileNoop|Ingest100' -benchmem -count 5 ./reconcile/

func TestMain(m *testing.M) {
	code := m.Run()
	benchCleanup.run()
	pgtest.StopLazy()
	os.Exit(code)
}

// benchCleanup holds what process-wide fixtures must undo.
var benchCleanup cleanups

type cleanups struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanups) add(fn func()) { c.mu.Lock(); c.fns = append(c.fns, fn); c.mu.Unlock() }

func (c *cleanups) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

// benchTempDir is a directory that outlives one benchmark call.
func benchTempDir(b *testing.B, pattern string) string {
	b.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		b.Fatal(err)
	}
	benchCleanup.add(func() { _ = os.RemoveAll(dir) })
	return dir
}

// benchViews projects into a views directory the way cmd/cli's adapter
// does, counting the files each projection wrote or removed.
type benchViews struct {
	d       *views.Dir
	export  bool // the page's static export too (cmd/cli does it on full passes)
	written atomic.Int64
}

func (v *benchViews) Project(ctx context.Context, st state.Store, res reconcile.Result, full bool) error {
	scope := views.Partial
	if full {
		scope = views.Full
	}
	w, err := v.d.Project(ctx, st, res, scope)
	v.written.Add(int64(len(w)))
	if err != nil || !v.export || !full {
		return err
	}
	files, err := ui.Export(ctx, st, res, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), ui.ReadExportStamps(v.d.Path))
	if err != nil {
		return err
	}
	w, err = ui.WriteExport(v.d, files)
	v.written.Add(int64(len(w)))
	return err
}

// agentLine is an agent line shaped like Claude Code's stream-json.
func agentLine(id string, n int) string {
	return fmt.Sprintf(`{"type":"assistant","session_id":"s-%s","message":{"role":"assistant","content":[{"type":"text","text":"line %d: reading the repository and running the tests again"}]}}`, id, n)
}

// createSpores adds spores desired Running in one transaction (the
// directory store's cost is per transaction, and per event file created:
// the first pass appends to each in one).
func createSpores(b *testing.B, st state.Store, ids []string) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	err := st.Update(ctx, func(tx state.Tx) error {
		for _, id := range ids {
			sp := state.Spore{
				Wish: state.Wish{ID: id, Colony: "colony-" + id[len(id)-1:], Rank: state.RankSpore, Desired: state.Running, Spec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}, Created: now, Updated: now},
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
}

// setBudgets gives every spore of ids and every colony a budget of
// tokens and cost that no benchmark reaches.
func setBudgets(b *testing.B, st state.Store, ids []string) {
	b.Helper()
	ctx := context.Background()
	big := state.Budget{TokensPerDay: 1 << 50, CostPerDayMicros: 1 << 50}
	err := st.Update(ctx, func(tx state.Tx) error {
		colonies := map[string]bool{}
		for _, id := range ids {
			sp, _, err := wish.SetBudget(ctx, tx, id, big, "user:bench", time.Now())
			if err != nil {
				return err
			}
			colonies[sp.Colony] = true
		}
		for c := range colonies {
			if _, err := wish.SetColony(ctx, tx, c, state.ColonySettings{Budget: big}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func sporeIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return ids
}

// --- BenchmarkReconcileNoop ---

const noopFleetSize = 10_000

// noopFleet is a store of noopFleetSize spores, all desired Running and
// running under the fake runtime, whose bridges hold exactly the lines
// the store holds: a `sporectl reconcile` over it has nothing to do.
type noopFleet struct {
	st      *statetest.Counting
	rt      *reconciletest.Runtime
	dir     string // the dir store's directory; "" for Postgres
	pgURL   string // the Postgres store's database; "" for dir
	project *benchViews
	ids     []string
	// http, when set, serves the fake bridges over loopback HTTP, and
	// the pass reaches them with the real client.
	http *reconciletest.HTTP
}

var noopFleets sync.Map // variant → *noopFleet

func (f *noopFleet) pass(b *testing.B) *reconcile.Pass {
	run := reconciletest.WithFake(f.rt)
	if f.http != nil { // the bridges over HTTP (reconcile.DialHTTP)
		run = reconciletest.WithRuntimeFunc(func(context.Context, state.Settings) (reconcile.Runtime, error) { return f.http.Runtime(), nil })
	}
	p := reconciletest.NewPass(b, f.st, run, reconciletest.RealClock())
	if f.project != nil {
		p.Project = f.project
	}
	return p
}

func (f *noopFleet) options() reconcile.Options {
	// What `sporectl reconcile` runs.
	return reconcile.Options{Heal: true, Deliver: true, Project: f.project != nil}
}

func buildNoopFleet(b *testing.B, variant string) *noopFleet {
	b.Helper()
	if f, ok := noopFleets.Load(variant); ok {
		return f.(*noopFleet)
	}
	ctx := context.Background()
	f := &noopFleet{rt: reconciletest.New(), ids: sporeIDs("spore", noopFleetSize)}
	var st state.Store
	var err error
	switch variant {
	case "postgres":
		srv := pgtest.Lazy(b)
		var name string
		name, f.pgURL, err = srv.CreateDatabase(ctx)
		if err != nil {
			b.Fatal(err)
		}
		st, _, err = pgstore.Init(ctx, f.pgURL, state.Settings{Runtime: "local"}, pgstore.Options{})
		if err == nil {
			benchCleanup.add(func() { _ = st.Close(); _ = srv.DropDatabase(context.Background(), name) })
			err = pgExec(ctx, f.pgURL, "CREATE EXTENSION IF NOT EXISTS pg_walinspect")
		}
	default:
		root := benchTempDir(b, "reconcile-bench-")
		f.dir = filepath.Join(root, "store")
		st, _, err = dirstore.Init(ctx, f.dir, state.Settings{Runtime: "local"}, dirstore.Options{})
		if err == nil {
			benchCleanup.add(func() { _ = st.Close() })
		}
		switch variant {
		case "dir+views", "dir+export":
			f.project = &benchViews{d: &views.Dir{Path: filepath.Join(root, "views")}, export: variant == "dir+export"}
		case "dir+http":
			f.http = reconciletest.NewHTTP(f.rt)
			benchCleanup.add(f.http.Close)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	f.st = &statetest.Counting{Store: st}
	createSpores(b, f.st, f.ids)

	// Settle: the first pass starts every spore; then each bridge gets
	// three agent lines, which the next pass ingests with the health
	// transitions; after that a pass must find nothing to do.
	pass := f.pass(b)
	if _, err := pass.Run(ctx, f.options()); err != nil {
		b.Fatal(err)
	}
	for _, id := range f.ids {
		f.rt.BridgeOf(id).Write(agentLine(id, 1), agentLine(id, 2), agentLine(id, 3))
	}
	for range 3 {
		if _, err := pass.Run(ctx, f.options()); err != nil {
			b.Fatal(err)
		}
	}
	before := f.st.Updates.Load()
	out, err := pass.Run(ctx, f.options())
	if err != nil {
		b.Fatal(err)
	}
	if n := f.st.Updates.Load() - before; n != 0 {
		b.Fatalf("the fleet did not settle: a pass after settling opened %d write transaction(s)", n)
	}
	for _, s := range out.Spores {
		if s.Effective != policy.Healthy || s.Observed.BridgeLastSeq != 3 {
			b.Fatalf("spore %s after settling: %s (%s), bridge at line %d", s.ID, s.Effective, s.Reason, s.Observed.BridgeLastSeq)
		}
	}
	noopFleets.Store(variant, f)
	return f
}

// fileStamp is what tells that a file was written.
type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
}

// treeStamps stamps every regular file under the roots.
func treeStamps(b *testing.B, roots ...string) map[string]fileStamp {
	b.Helper()
	out := map[string]fileStamp{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			var ino uint64
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ino = st.Ino
			}
			out[p] = fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: ino}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// changedBytes sums the sizes of the files created or rewritten between
// two stamps (a removed file counts its old size), and counts them.
func changedBytes(before, after map[string]fileStamp) (bytes int64, files int) {
	for p, a := range after {
		if bf, ok := before[p]; !ok || bf != a {
			bytes += a.size
			files++
		}
	}
	for p, bf := range before {
		if _, ok := after[p]; !ok {
			bytes += bf.size
			files++
		}
	}
	return bytes, files
}

func pgExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// walInsert is the cluster's WAL insert position.
func walInsert(b *testing.B, conn *pgx.Conn) string {
	b.Helper()
	var lsn string
	if err := conn.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// walWritten sums the WAL records the cluster wrote from start on (and
// returns them by resource manager, record type and relation), leaving out the server's own housekeeping (XLOG:
// checkpoints; Standby: the running-transactions snapshot the background
// writer logs every 15 s after any activity). Everything else (Heap,
// Btree, Transaction, …) is some session writing to a table.
func walWritten(b *testing.B, conn *pgx.Conn, start string) (tables int64, byRecord map[string]int64) {
	b.Helper()
	ctx := context.Background()
	end := walInsert(b, conn)
	byRecord = map[string]int64{}
	if end == start {
		return 0, byRecord
	}
	// Records can be read only once flushed; a commit flushes, but the
	// housekeeping records wait for the next one: CHECKPOINT flushes
	// everything (its own records come after end).
	var flushed bool
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() >= $1::text::pg_lsn", end).Scan(&flushed); err != nil {
		b.Fatal(err)
	}
	if !flushed {
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			b.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT resource_manager, record_type, coalesce(substring(block_ref from 'rel [0-9/]+'), ''), sum(record_length)::bigint
		FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn) GROUP BY 1, 2, 3`, start, end)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var rm, typ, rel string
		var n int64
		if err := rows.Scan(&rm, &typ, &rel, &n); err != nil {
			b.Fatal(err)
		}
		byRecord[strings.TrimSpace(rm+" "+typ+" "+rel)] = n
		if rm != "XLOG" && rm != "Standby" {
			tables += n
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return tables, byRecord
}

// BenchmarkReconcileNoop: `sporectl reconcile` (Heal and Deliver) over
// 10,000 spores that all run as desired and whose bridges have nothing
// new: wall time per pass, and what it wrote. updates/op counts the
// store's write transactions; for the directory store bytes-written/op
// and files-written/op are the files under the store (and the views)
// created, rewritten or removed; for Postgres wal-bytes/op is the WAL of
// table writes the cluster logged meanwhile.
//
// dir and postgres reach the fake bridges in memory; dir+http reaches
// them over loopback HTTP with the real bridge client, a fresh connection
// pool per pass as a new process would have; dir+views also projects
// (reconcile/views, as `sporectl reconcile` with views does).
func BenchmarkReconcileNoop(b *testing.B) {
	for _, variant := range []string{"dir", "dir+http", "dir+views", "dir+export", "postgres"} {
		b.Run(variant, func(b *testing.B) {
			f := buildNoopFleet(b, variant)
			ctx := context.Background()
			pass, opt := f.pass(b), f.options()
			var conn *pgx.Conn
			if f.pgURL != "" {
				var err error
				if conn, err = pgx.Connect(ctx, f.pgURL); err != nil {
					b.Fatal(err)
				}
				defer conn.Close(ctx)
				// Leave autovacuum nothing to do in the measured window,
				// and no dead row of ANALYZE's for a reader to prune.
				for _, sql := range []string{"VACUUM ANALYZE", "VACUUM pg_catalog.pg_statistic"} {
					if _, err := conn.Exec(ctx, sql); err != nil {
						b.Fatal(err)
					}
				}
			}
			var roots []string
			if f.dir != "" {
				roots = append(roots, f.dir)
			}
			if f.project != nil {
				roots = append(roots, f.project.d.Path)
			}
			stamps := treeStamps(b, roots...)
			updates, viewFiles := f.st.Updates.Load(), int64(0)
			if f.project != nil {
				viewFiles = f.project.written.Load()
			}
			var wal string
			if conn != nil {
				wal = walInsert(b, conn)
			}
			for b.Loop() {
				out, err := pass.Run(ctx, opt)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range out.Plans {
					if p.Start || p.Stop || len(p.Deliver) > 0 || p.Observed.Bridge != reconcile.BridgeUp {
						// A bridge that missed the observation deadline
						// (a machine far too loaded) ends up here too.
						b.Fatalf("a settled fleet planned work for %s: bridge %s %s, %s (%s)", p.Spore.ID,
							p.Observed.Bridge, p.Observed.BridgeProblem, p.Verdict.Effective, p.Verdict.Text)
					}
				}
			}
			n := float64(b.N)
			if conn != nil {
				tables, byRecord := walWritten(b, conn, wal)
				if len(byRecord) > 0 {
					b.Logf("WAL bytes by record over %d passes: %v", b.N, byRecord)
				}
				b.ReportMetric(float64(tables)/n, "wal-bytes/op")
			}
			if len(roots) > 0 {
				bytes, files := changedBytes(stamps, treeStamps(b, roots...))
				b.ReportMetric(float64(bytes)/n, "bytes-written/op")
				b.ReportMetric(float64(files)/n, "files-written/op")
			}
			if f.project != nil {
				b.ReportMetric(float64(f.project.written.Load()-viewFiles)/n, "view-files/op")
			}
			b.ReportMetric(float64(f.st.Updates.Load()-updates)/n, "updates/op")
		})
	}
}

// --- BenchmarkIngest100Bridges ---

const (
	ingestBridges = 100
	// ingestTurns echo turns fill each bridge's log: a turn is four lines
	// (turn_started, init, assistant, result), 802 lines in all with the
	// bridge_started of each of the two runs.
	ingestTurns = 200
	benchToken  = "bench-bridge-token-0123456789abcdef"
)

// ingestFleet is ingestBridges real bridges (bridge/server with the echo
// agent, each over its own loopback HTTP server), each holding the same
// log of ingestTurns turns, and a runtime stub that reports them running
// and ready.
type ingestFleet struct {
	rt    *reconciletest.Static
	ids   []string
	lines map[string]uint64 // each bridge's last seq
	total uint64
}

var ingest struct {
	once  sync.Once
	fleet *ingestFleet
}

// runBridge serves a real bridge over home on a loopback HTTP server
// until stop.
func runBridge(b *testing.B, home string) (client *bridge.Client, url string, stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, server.Config{Home: home, Token: benchToken, Agent: agent.Echo{}})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.RunAgent(ctx) }()
	ts := httptest.NewServer(srv.Handler())
	client, err = bridge.NewClient(ts.URL, benchToken, ts.Client())
	if err != nil {
		b.Fatal(err)
	}
	return client, ts.URL, func() { cancel(); <-done; ts.Close(); _ = srv.Close() }
}

// settled waits until a bridge is idle with nothing queued and its log
// stopped growing, and returns its status.
func settled(b *testing.B, c *bridge.Client) bridge.Status {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	var last uint64
	for {
		st, err := c.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.State == bridge.StateIdle && st.Queue == 0 && st.LastSeq == last && last > 0 {
			return st
		}
		last = st.LastSeq
		if time.Now().After(deadline) {
			b.Fatalf("bridge did not settle: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func copyTree(b *testing.B, from, to string) {
	b.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// buildIngestFleet runs ingestTurns echo turns on one bridge, then gives
// ingestBridges homes a copy of its files (the bridge's own log, queue and
// session, written by the bridge) and serves a bridge over each: filling
// every log turn by turn would take minutes of fsyncs.
func buildIngestFleet(b *testing.B) *ingestFleet {
	b.Helper()
	ingest.once.Do(func() {
		root := benchTempDir(b, "reconcile-ingest-")
		src := filepath.Join(root, "source")
		c, _, stop := runBridge(b, src)
		ctx := context.Background()
		for i := range ingestTurns {
			if _, err := c.Prompt(ctx, bridge.PromptRequest{ID: fmt.Sprintf("fill-%d", i), From: "user:bench", Text: fmt.Sprintf("prompt %d: please run the tests and report", i)}); err != nil {
				stop()
				b.Fatal(err)
			}
		}
		settled(b, c)
		stop()

		f := &ingestFleet{rt: &reconciletest.Static{Endpoints: map[string]reconcile.BridgeEndpoint{}}, ids: sporeIDs("bridge", ingestBridges), lines: map[string]uint64{}}
		clients := map[string]*bridge.Client{}
		for _, id := range f.ids {
			home := filepath.Join(root, id)
			copyTree(b, src, home)
			c, url, stop := runBridge(b, home)
			benchCleanup.add(stop)
			// The pass dials with the default client, as for local
			// bridges: each bridge is its own host.
			f.rt.Endpoints[id] = reconcile.BridgeEndpoint{BaseURL: url, Token: benchToken}
			clients[id] = c
		}
		for _, id := range f.ids {
			st := settled(b, clients[id])
			f.lines[id] = st.LastSeq
			f.total += st.LastSeq
		}
		ingest.fleet = f
	})
	if ingest.fleet == nil {
		b.Fatal("the ingest fleet could not be built in an earlier run")
	}
	return ingest.fleet
}

// BenchmarkIngest100Bridges: one `reconcile` pass ingesting every line of
// 100 real bridges into a fresh directory store (so every op fetches and
// commits the same backlog): events/s.
func BenchmarkIngest100Bridges(b *testing.B) { benchIngest(b, false) }

// BenchmarkIngest100BridgesBudgets is the same run with every spore and
// every colony given a budget none reaches: the cost of budget accounting
// on ingest (docs/performance.md).
func BenchmarkIngest100BridgesBudgets(b *testing.B) { benchIngest(b, true) }

func benchIngest(b *testing.B, budgets bool) {
	f := buildIngestFleet(b)
	ctx := context.Background()
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := filepath.Join(dir, strconv.Itoa(i))
		ds := statetest.DirAt(b, root, state.Settings{Runtime: "local"})
		createSpores(b, ds, f.ids)
		if budgets {
			setBudgets(b, ds, f.ids)
		}
		pass := reconciletest.NewPass(b, ds, reconciletest.WithRuntime(f.rt), reconciletest.RealClock())
		b.StartTimer()

		out, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
		if err != nil {
			b.Fatal(err)
		}

		b.StopTimer()
		var got uint64
		for _, s := range out.Spores {
			if s.Observed.Bridge != reconcile.BridgeUp {
				b.Fatalf("%s: bridge %s (%s)", s.ID, s.Observed.Bridge, s.Reason)
			}
		}
		err = ds.View(ctx, func(tx state.Tx) error {
			sps, err := tx.Spores(ctx)
			for _, sp := range sps {
				if sp.BridgeSeq != f.lines[sp.ID] {
					return fmt.Errorf("%s: ingested up to %d of %d lines", sp.ID, sp.BridgeSeq, f.lines[sp.ID])
				}
				got += sp.BridgeSeq
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		if got != f.total {
			b.Fatalf("ingested %d lines, want %d", got, f.total)
		}
		// Each op's store stays until the benchmark ends, where it is
		// checked (statetest) and closed.
		b.StartTimer()
	}
	b.ReportMetric(float64(f.total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(f.total), "events/op")
}

var _ reconcile.Runtime = (*reconciletest.Static)(nil)
