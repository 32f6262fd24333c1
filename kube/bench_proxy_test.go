package kube_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
)

// proxyFleetSize is the fleet whose bridges the proxy benchmarks ask: the
// cost is per request, so a fleet smaller than compare.sh's 1,001 gives
// the same per-bridge figure in less set-up.
const proxyFleetSize = 500

// proxyFleet is proxyFleetSize spores whose pods are Ready at one pod
// host, where one test bridge answers every pod's status: each bridge
// the pass asks from outside the cluster is one request through the API
// server's pod proxy that the bridge answers, as in a healthy fleet.
var proxyFleet struct {
	once    sync.Once
	env     *env
	ids     []string
	port    int
	answers *atomic.Int64
}

func benchProxyFleet(b *testing.B) {
	b.Helper()
	proxyFleet.once.Do(func() {
		host := kubetest.NewPodHost(b)
		l, err := host.Listen(0)
		require.NoError(b, err)
		answers := &atomic.Int64{}
		status, err := json.Marshal(bridge.Status{State: bridge.StateIdle, LastSeq: 7, Healthy: true, Agent: "echo"})
		require.NoError(b, err)
		fake := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A bridge takes its token in either header: the proxy's
			// (moved there by the runtime's client) or a direct call's.
			if r.URL.Path != "/v1/status" || (r.Header.Get(bridge.TokenHeader) == "" && r.Header.Get("Authorization") == "") {
				http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
				return
			}
			answers.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(status)
		}))
		fake.Listener = l
		fake.Start()
		b.Cleanup(fake.Close)

		e := newEnv(b)
		e.kubelet.IP = host.IP
		ctx := b.Context()
		reqs := make([]startRequest, proxyFleetSize)
		ids := make([]string, proxyFleetSize)
		for i := range reqs {
			ids[i] = fmt.Sprintf("p%04d", i)
			reqs[i] = startRequest{Spore: spore(ids[i]), Creds: creds(ids[i])}
		}
		require.NoError(b, startAll(ctx, e.rt, reqs, 0))
		parallel(b, proxyFleetSize, func(i int) error {
			name := kube.ObjectName(ids[i])
			if err := e.kubelet.Schedule(ctx, name); err != nil {
				return err
			}
			return e.kubelet.Run(ctx, name, true)
		})
		proxyFleet.env, proxyFleet.ids, proxyFleet.answers = e, ids, answers
		proxyFleet.port = l.Addr().(*net.TCPAddr).Port
	})
	if proxyFleet.env == nil {
		b.Fatal("proxy fleet setup failed in an earlier benchmark")
	}
}

// proxyRuntime is an operator's runtime on the proxy fleet (pods/proxy
// is not in sporectl's Role; the admin's is), its config changed by edit;
// inCluster dials the pods' addresses instead, as serve and the CronJob
// do.
func proxyRuntime(b *testing.B, edit func(*rest.Config), inCluster bool) (*kube.Runtime, *kubetest.Counter) {
	cfg := rest.CopyConfig(kubetest.Shared(b).Config)
	if edit != nil {
		edit(cfg)
	}
	cfg, counter := kubetest.Counting(cfg)
	rt, err := kube.New(cfg, kube.Options{Namespace: proxyFleet.env.ns, BridgePort: proxyFleet.port, InCluster: inCluster})
	require.NoError(b, err)
	return rt, counter
}

// Asking every bridge of a Ready fleet from outside the cluster, as
// status does: one observation (pods, claims), the endpoints (one LIST of
// the Secrets), then each bridge's GET /v1/status through the API
// server's pod proxy, at most par at once. Every iteration runs each way
// once, in turns, so a busy machine slows them alike:
//
//   - observe: the observation alone, asking no bridge (what status costs
//     when no pod is Ready), the baseline;
//   - h2-parN: through the proxy over client-go's HTTP/2 (one multiplexed
//     connection), N at once; 64 is the pass's bound
//     (reconcile.bridgeWorkers);
//   - h1-par64: the same over HTTP/1.1;
//   - direct-par64: each pod's address dialled, as a pass in the cluster
//     does (what a fan-out from inside costs, no API server on the way);
//   - pass: reconcile.Observe itself, status's observation from outside
//     (64 at once, every bridge under one 3 s deadline).
//
// X-ms/bridge is the wall time one bridge adds to the observation in way
// X, from the medians of the iterations (one slow observation on a busy
// machine would move a mean); X-cpu-ms/bridge the CPU it adds, this
// process's (sporectl's side and the test bridge's) with the API
// server's and etcd's, which a busy machine does not stretch as it
// stretches wall time; requests/op counts the API requests of one proxied way;
// pass-down/op counts the bridges the pass read as not Up although
// every one answers (those its deadline cut off), which must stay 0 for
// status to be honest at this size.
func BenchmarkBridgesThroughProxy(b *testing.B) {
	benchProxyFleet(b)
	ids := proxyFleet.ids
	ways := []struct {
		name      string
		par       int
		edit      func(*rest.Config)
		inCluster bool
	}{
		{"observe", 0, nil, false},
		{"h2-par1", 1, nil, false},
		{"h2-par16", 16, nil, false},
		{"h2-par64", 64, nil, false},
		{"h2-par256", 256, nil, false},
		{"h1-par64", 64, func(c *rest.Config) { c.NextProtos = []string{"http/1.1"} }, false},
		{"direct-par64", 64, nil, true},
		{"pass", -1, nil, false},
	}
	rts := make([]*kube.Runtime, len(ways))
	counters := make([]*kubetest.Counter, len(ways))
	for i, w := range ways {
		rts[i], counters[i] = proxyRuntime(b, w.edit, w.inCluster)
		counters[i].Reset()
	}
	took := make([][]time.Duration, len(ways))
	cpu := make([][]time.Duration, len(ways))
	srv := kubetest.Shared(b)
	answered := proxyFleet.answers.Load()
	asked, down := 0, 0
	for b.Loop() {
		for i, w := range ways {
			t0, c0 := time.Now(), cpuTime(b, srv)
			switch {
			case w.par == 0:
				observeOnly(b, rts[i], len(ids))
			case w.par < 0:
				down += passDown(b, rts[i], ids)
			default:
				askEveryBridge(b, rts[i], ids, w.par)
				asked += len(ids)
			}
			took[i] = append(took[i], time.Since(t0))
			cpu[i] = append(cpu[i], cpuTime(b, srv)-c0)
		}
	}
	// The pass's asks are not counted: those its deadline cut off never
	// reached the bridge.
	if got := proxyFleet.answers.Load() - answered; got < int64(asked) {
		b.Fatalf("the bridge answered %d status requests, want at least %d", got, asked)
	}
	b.ReportMetric(float64(down)/float64(b.N), "pass-down/op")
	base, baseCPU := medianMS(took[0]), medianMS(cpu[0])
	b.ReportMetric(base, "observe-ms")
	b.ReportMetric(baseCPU, "observe-cpu-ms")
	for i, w := range ways[1:] {
		b.ReportMetric((medianMS(took[i+1])-base)/float64(len(ids)), w.name+"-ms/bridge")
		b.ReportMetric((medianMS(cpu[i+1])-baseCPU)/float64(len(ids)), w.name+"-cpu-ms/bridge")
	}
	b.ReportMetric(float64(counters[3].Requests())/float64(b.N), "requests/op")
}

// cpuTime is the CPU spent so far by this process and by the API server
// and etcd (their /proc clock ticks).
func cpuTime(b *testing.B, srv *kubetest.Server) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for _, pid := range srv.PIDs() {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th of them.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		for _, v := range f[11:13] {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += time.Duration(t) * time.Second / clockTicks
		}
	}
	return total
}

// clockTicks is the kernel's USER_HZ, /proc's unit of CPU time on Linux.
const clockTicks = 100

// medianMS is the median of ds in milliseconds.
func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m.Seconds() * 1000
}

// passDown runs status's observation of ids from outside and counts
// the bridges it did not read as Up.
func passDown(b *testing.B, rt *kube.Runtime, ids []string) int {
	obs, _, err := reconcile.Observe(b.Context(), rt, ids)
	if err != nil {
		b.Fatal(err)
	}
	down := 0
	for _, id := range ids {
		if o := obs[id]; o.Bridge != reconcile.BridgeUp {
			if down == 0 {
				b.Logf("%s read as %s (%s): %v", id, o.Bridge, o.Reason, o.BridgeErr)
			}
			down++
		}
	}
	return down
}

// observeOnly is status's observation when no pod is Ready: no bridge
// is asked.
func observeOnly(b *testing.B, rt *kube.Runtime, want int) {
	obs, err := rt.Observe(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if len(obs.Spores) != want {
		b.Fatalf("observed %d spores, want %d", len(obs.Spores), want)
	}
}

// askEveryBridge is status's observation of a fleet whose pods are all
// Ready: the runtime's, then every bridge's status, par at a time.
func askEveryBridge(b *testing.B, rt *kube.Runtime, ids []string, par int) {
	ctx := b.Context()
	obs, err := rt.Observe(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	eps, err := rt.BridgeEndpoints(ctx, obs, ids)
	if err != nil {
		b.Fatal(err)
	}
	if len(eps) != len(ids) {
		b.Fatalf("%d endpoints, want %d", len(eps), len(ids))
	}
	next := make(chan reconcile.BridgeEndpoint)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for ep := range next {
				c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
				if err == nil {
					_, err = c.Status(ctx)
				}
				if err != nil {
					failed.Add(1)
				}
			}
		})
	}
	for _, id := range ids {
		next <- eps[id]
	}
	close(next)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d bridges did not answer", n, len(ids))
	}
}
