package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

// fastAgent writes n stream-json lines as fast as the pipe takes them.
type fastAgent struct{ n int }

func (f fastAgent) Name() string { return "fast" }

func (f fastAgent) Start(ctx context.Context, t agent.Turn) (agent.Process, error) {
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf bytes.Buffer
		for i := 0; i < f.n; i++ {
			fmt.Fprintf(&buf, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"line %d of a fast agent, about one hundred and fifty bytes long in all"}]},"session_id":"%s"}`+"\n", i, t.SessionID)
			if buf.Len() > 32<<10 {
				if _, err := w.Write(buf.Bytes()); err != nil {
					return
				}
				buf.Reset()
			}
		}
		buf.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"done"}` + "\n")
		_, _ = w.Write(buf.Bytes())
		w.Close()
	}()
	return &pipeProcess{r: r, done: done}, nil
}

type pipeProcess struct {
	r    *io.PipeReader
	done chan struct{}
}

func (p *pipeProcess) Stdout() io.Reader { return p.r }
func (p *pipeProcess) PID() int          { return 0 }
func (p *pipeProcess) Interrupt() error  { return p.r.Close() }
func (p *pipeProcess) Wait() error       { <-p.done; return nil }

// BenchmarkLineThroughput: one turn of b.N lines from a fast agent,
// numbered and fsync'd in batches, read by an HTTP client with long-polls.
func BenchmarkLineThroughput(b *testing.B) {
	h := startBenchBridge(b, fastAgent{n: b.N})
	ctx := context.Background()
	start0 := h.srv.log.Last()
	b.ResetTimer()
	start := time.Now()
	if _, err := h.client.Prompt(ctx, bridge.PromptRequest{ID: "go", From: "bench", Text: "go"}); err != nil {
		b.Fatal(err)
	}
	after := start0
	// b.N agent lines, plus the turn_started and result lines.
	for target := start0 + uint64(b.N) + 2; after < target; {
		page, err := h.client.Events(ctx, after, bridge.MaxLimit, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Events) > 0 {
			after = page.Events[len(page.Events)-1].Seq
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lines/s")
}

// BenchmarkLongPollLatency: how long a line takes from the bridge emitting
// it to a client already waiting in a long-poll (fsync included).
func BenchmarkLongPollLatency(b *testing.B) {
	h := startBenchBridge(b, agent.Echo{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan time.Time, 1)
	after := h.srv.log.Last() + 1 // the bridge_started line may still be on its way
	if _, err := h.srv.log.Wait(ctx, after-1); err != nil {
		b.Fatal(err)
	}
	go func() {
		for ctx.Err() == nil {
			page, err := h.client.Events(ctx, after, 10, 30*time.Second)
			if err != nil {
				return
			}
			for _, e := range page.Events {
				after = e.Seq
				got <- time.Now()
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Millisecond) // let the client get back into its wait
		t0 := time.Now()
		h.srv.bridgeLine("bench", map[string]any{"i": i})
		lat = append(lat, (<-got).Sub(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func startBenchBridge(b *testing.B, ag agent.Starter) *harness {
	b.Helper()
	home := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, Config{Home: home, Token: testToken, Agent: ag})
	if err != nil {
		b.Fatal(err)
	}
	h := newHTTPHarness(b, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.RunAgent(ctx)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
		h.ts.Close()
		_ = srv.Close()
	})
	return h
}
