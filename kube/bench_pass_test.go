package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

const wakeSpores = 100

// BenchmarkWake100: `sporectl wake` of 100 spores on the real API
// server, as the command does it: one transaction recording desired
// Running for all of them, then the pass over the 100 ids with Heal and
// Force (load, observe, credentials committed, starts 32 at a time,
// commit). Every op gets a fresh namespace and store, made outside the
// timer. spores/s is 100 over the timed part; requests/spore counts the
// runtime's API calls as the client sent them, server-req/spore the
// API server's own count (apiserver_request_total) of requests on pods,
// secrets and claims.
//
// kube: spores that never ran (nothing in the namespace: claim, Secret
// and pod created). kube-asleep: spores that ran and were put to sleep
// by real passes (claim and Secret kept, pod gone): a wake proper.
//
//	go test ./kube -run '^$' -bench Wake100 -benchtime 3x -count 5
func BenchmarkWake100(b *testing.B) {
	b.Run("kube", func(b *testing.B) { benchWake(b, false) })
	b.Run("kube-asleep", func(b *testing.B) { benchWake(b, true) })
}

func benchWake(b *testing.B, asleep bool) {
	ids := make([]string, wakeSpores)
	for i := range ids {
		ids[i] = fmt.Sprintf("w%03d", i)
	}
	ctx := context.Background()
	dir := b.TempDir()
	var total time.Duration
	var requests, served, updates int64
	var storeTime, cpuUsed time.Duration
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
		pass := reconciletest.NewPass(b, ds, reconciletest.WithRuntime(rt), reconciletest.RealClock())
		wish := func(d state.Desired) {
			b.Helper()
			if err := setDesired(ctx, ds, ids, d); err != nil {
				b.Fatal(err)
			}
		}
		if asleep {
			// Woken by a pass as the command does, then put to sleep: the
			// wish recorded and the pods removed, as a sleep's pass does
			// (it stops only pods that run, and no kubelet runs these).
			wish(state.Running)
			wakePass(b, pass, ids)
			wish(state.Paused)
			for _, id := range ids {
				if err := rt.Stop(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			pods, err := e.admin.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(pods.Items) != 0 {
				b.Fatalf("%d pods left after the sleep", len(pods.Items))
			}
		}
		counter.Reset()
		ds.reset()
		before := serverRequests(b, e)
		cpu0 := serverCPU(b)
		b.StartTimer()

		start := time.Now()
		wish(state.Running) // what `wake` records before its pass (cmd/cli setDesired)
		wakePass(b, pass, ids)
		total += time.Since(start)

		b.StopTimer()
		cpuUsed += serverCPU(b) - cpu0
		after := serverRequests(b, e)
		for k, v := range after {
			if d := v - before[k]; d > 0 && testing.Verbose() {
				b.Logf("%s: %d", k, d)
			}
			served += v - before[k]
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
	b.ReportMetric(float64(served)/float64(wakeSpores*b.N), "server-req/spore")
	b.ReportMetric(cpuUsed.Seconds()*1000/float64(wakeSpores*b.N), "server-cpu-ms/spore")
	b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
	b.ReportMetric(storeTime.Seconds()*1000/float64(b.N), "update-ms/op")
}

// setDesired records desired d for ids in one transaction, with the
// event, as `wake` and `sleep` do.
func setDesired(ctx context.Context, ds state.Store, ids []string, d state.Desired) error {
	now := time.Now().UTC()
	return ds.Update(ctx, func(tx state.Tx) error {
		for _, id := range ids {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			was := sp.Desired
			sp.Desired, sp.Updated = d, now
			sp.Generation++
			if _, err := storetest.Put(ctx, tx, sp); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "wake", At: now, Text: fmt.Sprintf("desired %s → %s", was, d)}}); err != nil {
				return err
			}
		}
		return nil
	})
}

// wakePass is the pass of `wake` over ids; every one of them must start.
func wakePass(b *testing.B, pass *reconcile.Pass, ids []string) {
	b.Helper()
	out, err := pass.Run(context.Background(), reconcile.Options{IDs: ids, Heal: true, Force: ids})
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
	if started != len(ids) {
		b.Fatalf("the pass started %d spores, want %d", started, len(ids))
	}
}

var (
	subresource  = regexp.MustCompile(`subresource="[^"]`)
	verbResource = regexp.MustCompile(`code="(\d+)".*resource="(pods|secrets|persistentvolumeclaims)".*verb="(\w+)"`)
)

// serverCPU is the CPU time the API server and its etcd have used so
// far (user and system, from /proc): what a wake costs the server, which
// bounds the rate on a machine of n cores at n seconds a second.
func serverCPU(b *testing.B) time.Duration {
	b.Helper()
	var ticks int64
	for _, pid := range kubetest.Shared(b).PIDs() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are the 14th and 15th of the line, the 12th and 13th after it.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %v", pid, err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// serverRequests is the API server's count of the requests it answered
// on pods, secrets and claims, from its metrics, by verb and resource.
func serverRequests(b *testing.B, e *env) map[string]int64 {
	b.Helper()
	raw, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || subresource.MatchString(line) {
			continue
		}
		m := verbResource.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatalf("metrics line %q: %v", line, err)
		}
		out[m[1]+" "+m[2]+" "+m[3]] += int64(v)
	}
	return out
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
