package server

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/fakeapi"
)

// promptGap is how long a bridge is idle before each prompt of
// BenchmarkClaudeFirstReply ($SPORECTL_BENCH_PROMPT_GAP, default 1.5 s),
// and so how long the prestarted Claude Code has had to start when its
// prompt comes: 0 is the worst case (a prompt that comes as the bridge
// starts), a few seconds a prompt that comes after the last turn's
// answer was read.
func promptGap(b *testing.B) time.Duration {
	v := os.Getenv("SPORECTL_BENCH_PROMPT_GAP")
	if v == "" {
		return 1500 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("SPORECTL_BENCH_PROMPT_GAP: %v", err)
	}
	return d
}

// BenchmarkClaudeFirstReply: from a prompt posted to an idle bridge to the
// first line of the model's reply (the first "assistant" line numbered),
// with the real Claude Code and the fake Messages API, for a bridge whose
// next turn's Claude Code waits already (prestarted) and one that starts
// it for the prompt (started), in turns in the same run. Reported: each
// one's median and the ratio of the medians (prestarted / started).
func BenchmarkClaudeFirstReply(b *testing.B) {
	bin := fakeapi.ClaudeBin(b)
	api := fakeapi.New()
	apiSrv := api.Start()
	b.Cleanup(apiSrv.Close)
	type mode struct {
		name string
		ag   *agent.Claude
		h    *harness
		lat  []time.Duration
	}
	modes := []*mode{{name: "prestarted"}, {name: "started"}}
	for _, m := range modes {
		m.ag = &agent.Claude{Bin: bin, Args: []string{"--permission-mode", "acceptEdits"}, Env: fakeapi.ClaudeEnv(apiSrv.URL),
			Prestart: m.name == "prestarted"}
		m.h = startBenchBridge(b, m.ag)
		firstReply(b, m.h, m.ag, "warm-"+m.name) // the session made: every measured turn resumes it
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range modes {
			m := modes[(i+j)%len(modes)] // each goes first every other round
			m.lat = append(m.lat, firstReply(b, m.h, m.ag, fmt.Sprintf("%s-%d", m.name, i)))
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(modes[0].lat), "prestarted-p50-ms")
	b.ReportMetric(med(modes[1].lat), "started-p50-ms")
	b.ReportMetric(med(modes[0].lat)/med(modes[1].lat), "ratio-p50")
	b.ReportMetric(0, "ns/op")
}

// firstReply waits promptGap, posts a prompt to h and returns the time to
// the first line of the model's reply; it returns once the turn is over
// and, for a prestarting agent, the next turn's process is started.
func firstReply(b *testing.B, h *harness, ag *agent.Claude, id string) time.Duration {
	b.Helper()
	ctx := context.Background()
	if ag.Prestart {
		// Started afresh now, so that it has had promptGap, not the other
		// bridge's turn as well, to start when the prompt comes.
		ag.DropPrepared()
		h.srv.prepareNext(ctx)
	}
	time.Sleep(promptGap(b))
	after := h.srv.log.Last()
	start := time.Now()
	if _, err := h.client.Prompt(ctx, bridge.PromptRequest{ID: id, From: "bench", Text: "say hello " + id}); err != nil {
		b.Fatal(err)
	}
	var reply time.Duration
	for done := false; !done; {
		page, err := h.client.Events(ctx, after, bridge.MaxLimit, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range page.Events {
			after = e.Seq
			switch lineField(e, "type") {
			case "assistant":
				if reply == 0 {
					reply = time.Since(start)
				}
			case "result":
				done = true
			}
		}
	}
	if reply == 0 {
		b.Fatalf("turn %s ended without a reply line", id)
	}
	for deadline := time.Now().Add(30 * time.Second); ag.Prestart && ag.PreparedPID() == 0; {
		if time.Now().After(deadline) {
			b.Fatal("no process started for the next turn")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return reply
}
