package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkPassHostileBridge (issue 35, docs/performance.md "A hostile
// bridge"): a pass over 1,000 spores whose bridges each hold a new line,
// over loopback HTTP with the real client, without and with two hostile
// bridges among them: one answering a 40 MB line, one that always has
// 50,000 more lines of 740 bytes (37 MB) to give. It reports the pass's
// peak live heap, sampled, and what it allocated.
//
// Run each variant in a process of its own, so that peak-RSS-MiB is its:
//
//	for v in calm hostile; do
//	  go test -run '^$' -bench "PassHostileBridge/$v\$" -benchtime 5x -count 1 ./reconcile/
//	done
func BenchmarkPassHostileBridge(b *testing.B) {
	for _, hostile := range []bool{false, true} {
		name := "calm"
		if hostile {
			name = "hostile"
		}
		b.Run(name, func(b *testing.B) { benchHostile(b, hostile) })
	}
}

const (
	hostileFleet   = 1_000
	hostileLong    = 40 << 20
	hostileFlood   = 50_000
	hostileLineLen = 740
)

func benchHostile(b *testing.B, hostile bool) {
	ctx := context.Background()
	root := benchTempDir(b, "reconcile-hostile-")
	st0, _, err := dirstore.Init(ctx, filepath.Join(root, "store"), state.Settings{Runtime: "local"}, dirstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st0.Close()
	st := &statetest.Counting{Store: st0}
	ids := sporeIDs("spore", hostileFleet)
	createSpores(b, st, ids)
	// The flooding spore's colony may store as much as the pass takes:
	// every op then takes the pass's bound, not what is left of a quota.
	if err := st.Update(ctx, func(tx state.Tx) error {
		_, err := wish.SetColony(ctx, tx, "colony-1", state.ColonySettings{IngestQuotaMiB: state.MaxIngestQuotaMiB})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	rt := reconciletest.New()
	h := reconciletest.NewHTTP(rt)
	defer h.Close()
	hs := httptest.NewServer(hostileBridge())
	defer hs.Close()
	long, flood := ids[0], ids[1]
	pass := reconciletest.NewPass(b, st, reconciletest.WithDial(reconcile.DialHTTP), reconciletest.RealClock(),
		reconciletest.WithRuntimeFunc(func(context.Context, state.Settings) (reconcile.Runtime, error) {
			r := &hostileRuntime{Runtime: h.Runtime()}
			if hostile {
				r.hostile = map[string]string{long: hs.URL + "/long", flood: hs.URL + "/flood"}
			}
			return r, nil
		}))
	opt := reconcile.Options{Heal: true, Deliver: true}
	if _, err := pass.Run(ctx, opt); err != nil { // starts every spore
		b.Fatal(err)
	}
	n := 0
	var peak, alloc uint64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		n++
		for _, id := range ids {
			rt.BridgeOf(id).Write(agentLine(id, n))
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		stop := sampleHeap()
		b.StartTimer()
		out, err := pass.Run(ctx, opt)
		b.StopTimer()
		p := stop()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, p)
		alloc += after.TotalAlloc - before.TotalAlloc
		for _, s := range out.Spores {
			want := policy.Healthy
			if hostile && s.ID == long {
				want = policy.Suspect
			}
			if s.Effective != want {
				b.Fatalf("%s: %s (%s), want %s", s.ID, s.Effective, s.Reason, want)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		// The process's, fixture included: compare runs of one variant
		// each (-bench PassHostileBridge/calm, then /hostile).
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	}
	b.ReportMetric(float64(alloc)/float64(n)/(1<<20), "alloc-MiB/op")
}

// sampleHeap samples the live heap every millisecond until the returned
// function is called, which returns the largest sample.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		read()
		return peak.Load()
	}
}

// hostileRuntime sends the pass to the hostile bridge for some spores.
type hostileRuntime struct {
	reconcile.Runtime
	hostile map[string]string
}

func (r *hostileRuntime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	ep, err := r.Runtime.Bridge(ctx, id)
	if u, ok := r.hostile[id]; ok && err == nil {
		ep.BaseURL = u
	}
	return ep, err
}

// hostileBridge answers as a hostile bridge would, streaming so that its
// own cost stays out of the pass's heap: /long has one line of 40 MB,
// /flood always 50,000 more lines than were asked for.
func hostileBridge() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /long/v1/status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"state":"idle","last_seq":1,"healthy":true}`)
	})
	mux.HandleFunc("GET /long/v1/events", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"events":[{"seq":1,"at":"2026-01-01T00:00:00Z","line":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range hostileLong / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, `"}],"last_seq":1}`)
	})
	const far = 1 << 40
	mux.HandleFunc("GET /flood/v1/status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"state":"idle","last_seq":%d,"healthy":true}`, far)
	})
	text := strings.Repeat("z", hostileLineLen-len(`{"type":"assistant","text":""}`))
	mux.HandleFunc("GET /flood/v1/events", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		fmt.Fprint(w, `{"events":[`)
		// As many as asked, up to the page's bound (the contract's): a
		// flood, but one that keeps the contract.
		for i := range min(limit, hostileFlood, bridge.MaxPageLineBytes/hostileLineLen) {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"seq":%d,"at":"2026-01-01T00:00:00Z","line":{"type":"assistant","text":"%s"}}`, after+1+uint64(i), text)
		}
		fmt.Fprintf(w, `],"last_seq":%d}`, far)
	})
	return mux
}
