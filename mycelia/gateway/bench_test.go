package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// The gateway's cost per call against the same call made straight to the
// fake upstream (docs/gateway.md "Cost"): each sub-benchmark pair runs
// the same request, direct and through the gateway, whose extra is the
// key check (a store read), the budget's fleet read (shared for 2 s),
// the proxying and one store write per count (a streamed answer counts
// twice: message_start, message_delta).
//
//	go test -run '^$' -bench . -benchtime 2s ./mycelia/gateway/

var benchLogs *syncBuffer

// target is where a sub-benchmark sends its calls, and with which key.
type target struct {
	name, url, key string
}

func benchWorld(b *testing.B) (*world, []target) {
	w := newWorld(b, state.Settings{ModelCallsPerMinute: state.MaxModelCallsPerMinute})
	w.realClock.Store(true)
	benchLogs = w.logs
	w.spore("w1")
	return w, []target{
		{"direct", w.up.srv.URL, "sk-fake"},
		{"gateway", w.srv.URL + "/model", w.key("w1")},
	}
}

func benchCall(b *testing.B, c *http.Client, tg target, body string) (ttfb, took time.Duration) {
	req, err := http.NewRequest(http.MethodPost, tg.url+"/v1/messages", strings.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("x-api-key", tg.key)
	req.Header.Set("anthropic-version", "2023-06-01")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		b.Fatal(err)
	}
	ttfb = time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		logs := benchLogs.String()
		b.Fatal(err, logs[max(len(logs)-3000, 0):])
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", tg.name, resp.Status)
	}
	return ttfb, time.Since(start)
}

// quantiles reports the median and the 99th percentile of ds as
// metrics named prefix+"p50-ns" and prefix+"p99-ns".
func quantiles(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[min(int(q*float64(len(ds))), len(ds)-1)].Nanoseconds()) }
	b.ReportMetric(at(0.50), prefix+"p50-ns")
	b.ReportMetric(at(0.99), prefix+"p99-ns")
}

// BenchmarkCall: one whole (not streamed) call after another, with the
// median and 99th percentile of a call's time.
func BenchmarkCall(b *testing.B) {
	_, targets := benchWorld(b)
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			c := &http.Client{}
			var took []time.Duration
			for b.Loop() {
				_, d := benchCall(b, c, tg, whole)
				took = append(took, d)
			}
			quantiles(b, "", took)
		})
	}
}

// BenchmarkStream: one streamed call after another, with the time to its
// first byte (ttfb-ns/op: the gateway counts message_start before it).
func BenchmarkStream(b *testing.B) {
	_, targets := benchWorld(b)
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			c := &http.Client{}
			var ttfb time.Duration
			var firsts, took []time.Duration
			for b.Loop() {
				f, d := benchCall(b, c, tg, streamed)
				ttfb += f
				firsts, took = append(firsts, f), append(took, d)
			}
			b.ReportMetric(float64(ttfb.Nanoseconds())/float64(len(firsts)), "ttfb-ns/op")
			quantiles(b, "ttfb-", firsts)
			quantiles(b, "", took)
		})
	}
}

// BenchmarkParallel: streamed calls by 8, then 64, clients per core at once, in
// calls a second, and the process's CPU time per call (client, fake and,
// for the gateway, the gateway and its store: the difference is the
// gateway's). gateway: one spore makes them all (its record is the one
// every count writes); gateway-16: 16 spores, one per client.
func BenchmarkParallel(b *testing.B) {
	w, targets := benchWorld(b)
	var keys []string
	for i := range 16 {
		id := fmt.Sprintf("p%02d", i)
		w.spore(id)
		keys = append(keys, w.key(id))
	}
	targets = append(targets, target{"gateway-16", targets[1].url, ""})
	for _, tg := range targets {
		for _, per := range []int{8, 64} {
			benchParallel(b, tg, keys, per)
		}
	}
}

// benchParallel runs BenchmarkParallel's calls to tg with per clients
// per core (on 2 cores: 16 or 128 streams open at once).
func benchParallel(b *testing.B, tg target, keys []string, per int) {
	b.Run(fmt.Sprintf("%s/streams=%d", tg.name, per*runtime.GOMAXPROCS(0)), func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
		var calls, clients atomic.Int64
		b.SetParallelism(per)
		start, cpu0 := time.Now(), cpuTime(b)
		b.RunParallel(func(pb *testing.PB) {
			mine := tg
			if mine.key == "" {
				mine.key = keys[int(clients.Add(1)-1)%len(keys)]
			}
			for pb.Next() {
				benchCall(b, c, mine, streamed)
				calls.Add(1)
			}
		})
		n := float64(calls.Load())
		b.ReportMetric(n/time.Since(start).Seconds(), "calls/s")
		b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/n, "cpu-ns/call")
	})
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
