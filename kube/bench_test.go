package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

const fleetSize = 1000

// fleetEnv is one namespace holding fleetSize spores whose pods the test
// kubelet reports running and ready, shared by the observe benchmarks.
var fleet struct {
	once sync.Once
	env  *env
}

func benchFleet(b *testing.B) *env {
	b.Helper()
	fleet.once.Do(func() {
		e := newEnv(b)
		ctx := b.Context()
		reqs := make([]startRequest, fleetSize)
		for i := range reqs {
			id := fmt.Sprintf("f%04d", i)
			reqs[i] = startRequest{Spore: spore(id), Creds: creds(id)}
		}
		require.NoError(b, startAll(ctx, e.rt, reqs, 0))
		parallel(b, fleetSize, func(i int) error {
			name := kube.ObjectName(fmt.Sprintf("f%04d", i))
			if err := e.kubelet.Schedule(ctx, name); err != nil {
				return err
			}
			return e.kubelet.Run(ctx, name, true)
		})
		fleet.env = e
	})
	if fleet.env == nil {
		b.Fatal("fleet setup failed in an earlier benchmark")
	}
	return fleet.env
}

func parallel(tb testing.TB, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range defaultParallelism {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
}

// countedFleetRuntime is a runtime on the benchmark fleet's namespace
// whose requests and response bytes are counted from zero.
func countedFleetRuntime(b *testing.B) (*kube.Runtime, *kubetest.Counter) {
	e := benchFleet(b)
	cfg, counter := kubetest.Counting(e.saCfg)
	rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
	require.NoError(b, err)
	counter.Reset()
	return rt, counter
}

// Observing the whole fleet: wall time per observation and API requests
// per observation (which must not grow with the fleet).
func BenchmarkObserveFleet1000(b *testing.B) {
	rt, counter := countedFleetRuntime(b)
	for b.Loop() {
		obs, err := rt.Observe(b.Context(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(obs.Spores) != fleetSize {
			b.Fatalf("observed %d spores, want %d", len(obs.Spores), fleetSize)
		}
	}
	b.ReportMetric(float64(counter.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(counter.ResponseBytes())/float64(b.N), "resp-bytes/op")
}

// Observing one named spore of the fleet: the same two LISTs, narrowed
// by label to its pod and claim, so what the API server sends (resp-bytes/op)
// and what the client decodes do not grow with the fleet. Run beside
// BenchmarkObserveFleet1000 for the ratio.
func BenchmarkObserveNamed1000(b *testing.B) {
	rt, counter := countedFleetRuntime(b)
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("f%04d", i%fleetSize)
		i++
		obs, err := rt.Observe(b.Context(), []string{id})
		if err != nil {
			b.Fatal(err)
		}
		if po, ok := obs.Spores[id]; len(obs.Spores) != 1 || !ok || po.State != reconcile.PodRunning {
			b.Fatalf("observed %v, want %s alone and running", obs.Spores, id)
		}
	}
	b.ReportMetric(float64(counter.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(counter.ResponseBytes())/float64(b.N), "resp-bytes/op")
}

// Creating fleetSize spores' claims, secrets and pods from scratch, in a
// fresh namespace each time.
func BenchmarkStartFleet1000(b *testing.B) {
	reqs := make([]startRequest, fleetSize)
	for i := range reqs {
		id := fmt.Sprintf("s%04d", i)
		reqs[i] = startRequest{Spore: spore(id), Creds: creds(id)}
	}
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b)
		b.StartTimer()
		start := time.Now()
		if err := startAll(b.Context(), e.rt, reqs, benchParallelism()); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(fleetSize*b.N)/total.Seconds(), "spores/s")
}

// statusJSON is the shape `status -o json` prints for the observed part.
type statusJSON struct {
	Spores []statusSpore `json:"spores"`
}

type statusSpore struct {
	ID       string             `json:"id"`
	Observed reconcile.Observed `json:"observed"`
}

func observeJSON(b *testing.B, rt *kube.Runtime, w io.Writer) {
	obs, err := rt.Observe(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	out := statusJSON{Spores: make([]statusSpore, 0, len(obs.Spores))}
	for id, o := range obs.Spores {
		out.Spores = append(out.Spores, statusSpore{ID: id, Observed: reconcile.Observed{
			Pod: o.State, Bridge: reconcile.BridgeUnknown, Restarts: o.Restarts, Reason: reconcile.Reason(o.Reason),
		}})
	}
	sort.Slice(out.Spores, func(i, j int) bool { return out.Spores[i].ID < out.Spores[j].ID })
	if err := json.NewEncoder(w).Encode(out); err != nil {
		b.Fatal(err)
	}
}

// Observe plus JSON output against `kubectl get pods -l … -o json` on the
// same server and fleet. ratio = sporectl time / kubectl time.
func BenchmarkObserveJSONVsKubectl(b *testing.B) {
	e := benchFleet(b)
	kubectl := kubetest.RequireBinary(b, "kubectl")
	srv := kubetest.Shared(b)
	rt, err := kube.New(e.saCfg, kube.Options{Namespace: e.ns})
	require.NoError(b, err)
	selector := kube.LabelManagedBy + "=" + kube.ManagedByValue + "," + kube.LabelComponent + "=" + kube.ComponentSpore
	var ours, theirs time.Duration
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		t0 := time.Now()
		observeJSON(b, rt, &buf)
		ours += time.Since(t0)

		t1 := time.Now()
		cmd := exec.Command(kubectl, "--kubeconfig", srv.Kubeconfig, "get", "pods", "-n", e.ns, "-l", selector, "-o", "json")
		cmd.Stdout = io.Discard
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("kubectl: %v %s", err, stderr.String())
		}
		theirs += time.Since(t1)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "sporectl-ms/op")
	b.ReportMetric(float64(theirs.Milliseconds())/float64(b.N), "kubectl-ms/op")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "ratio")
}

func benchParallelism() int {
	n, _ := strconv.Atoi(os.Getenv("BENCH_PAR"))
	return n
}

// startRequest is one spore to start with its credentials.
type startRequest struct {
	Spore state.Spore
	Creds reconcile.Credentials
}

// defaultParallelism is how many spores StartAll starts at once. Each
// start is three round trips that mostly wait on etcd, so a few dozen in
// flight keep the API server busy without tripping its fairness limits.
const defaultParallelism = 32

// startAll starts many spores concurrently, to measure the runtime alone;
// sporectl's own parallel starts are the pass's (reconcile/act.go).
func startAll(ctx context.Context, r *kube.Runtime, reqs []startRequest, parallelism int) error {
	if parallelism <= 0 {
		parallelism = defaultParallelism
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan startRequest)
	)
	for range min(parallelism, len(reqs)) {
		wg.Go(func() {
			for req := range next {
				if err := r.Start(ctx, req.Spore, reconcile.Launch{Creds: req.Creds}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, req := range reqs {
		next <- req
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
