package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

// TestGatewayServeKilledMidStream — row "serve, mid-stream of a model
// call": each round, a prompt whose answer streams slowly (a pause
// between every event); while Claude Code reads it, serve is SIGKILLed at
// a random point of the stream (after message_start, among the deltas,
// after message_delta), then started again on the same address. Claude
// Code carries on as it does against the real API, and the turn completes
// without the bridge running it again: it makes the call again, or,
// holding part of the answer, asks the model to go on from where it was
// cut off (a new call). Against the fake's own
// account of what it sent: every message is counted exactly once (the
// store's call ids are the fake's, each once; its input counted once),
// every message written whole before its serve died counted whole, the
// one cut counted what serve had forwarded of it (its input, its output
// so far), and nothing else; check is clean.
func TestGatewayServeKilledMidStream(t *testing.T) {
	const (
		rounds = 4
		pause  = 250 * time.Millisecond
		// events of a text answer: message_start, a block's start, its 3
		// deltas and stop, message_delta, message_stop.
		events = 8
		// settled is how long after an event was written the gateway has
		// surely counted and forwarded it (one synced commit, on a busy
		// machine).
		settled = 300 * time.Millisecond
	)
	api := fakeapi.New()
	for n := range rounds {
		api.Script(fakeapi.Rule{Match: fmt.Sprintf("round %d:", n), Steps: []fakeapi.Reply{
			fakeapi.Text(fmt.Sprintf("the answer to round %d, streamed slowly", n)).Streaming(pause)}})
	}
	g := newGatewayRig(t, api)
	id := "gw-killed"
	g.wake(id)

	type kill struct {
		cut fakeapi.Answer // the message in flight when serve died
		at  time.Time      // serve gone
	}
	var kills []kill
	var prompts []sent
	for n := range rounds {
		text := fmt.Sprintf("round %d: answer slowly", n)
		pid := g.prompt(id, text)
		prompts = append(prompts, sent{id: pid, text: text, acked: true})
		// A random point of the stream, at least settled after its
		// message_start and before its last event (message_delta is
		// written at (events-2)*pause): one in each of as many stretches
		// of it as there are rounds, so the early and the late points are
		// both taken.
		stretch := (time.Duration(events-1)*pause - settled) / rounds
		after := settled + time.Duration(n)*stretch + rand.N(stretch)
		var x fakeapi.Answer
		require.Eventually(t, func() bool {
			flying := api.InFlight()
			if len(flying) != 1 || !strings.Contains(flying[0].Prompt, text) || flying[0].Started.IsZero() {
				return false
			}
			x = flying[0]
			return time.Since(x.Started) >= after
		}, 60*time.Second, 5*time.Millisecond, "round %d: no answer of %q in flight alone: %+v", n, text, api.Answered())
		g.killServe()
		kills = append(kills, kill{cut: x, at: time.Now()})
		g.startServe()
		g.waitIdle(id, 60*time.Second)
		require.Contains(t, g.ok("chat", id), fmt.Sprintf("the answer to round %d", n), "round %d: the turn completed", n)
		t.Logf("round %d: serve killed %s after %s's message_start", n, after.Round(time.Millisecond), x.ID)
	}

	answers := api.Answered()
	for _, a := range answers {
		t.Logf("the fake answered %s (stream %v, whole %v) to %.40q", a.ID, a.Stream, a.Whole(), a.Prompt)
	}
	rec := g.counted(id)
	byID := map[string]state.CountedCall{}
	for _, c := range rec.ModelCalls {
		require.NotContains(t, byID, c.ID, "call %s counted twice", c.ID)
		byID[c.ID] = c
	}
	cut := map[string]kill{}
	for _, k := range kills {
		cut[k.cut.ID] = k
	}
	var want state.Usage
	for _, a := range answers {
		c, ok := byID[a.ID]
		require.True(t, ok, "%s: the fake answered it (%q) through serve, its message_start %s before serve died; it is not counted", a.ID, a.Prompt, settled)
		fake := state.Usage{InputTokens: int64(a.Usage.Input), OutputTokens: int64(a.Usage.Output),
			CacheCreationTokens: int64(a.Usage.CacheCreation), CacheReadTokens: int64(a.Usage.CacheRead)}
		k, wasCut := cut[a.ID]
		switch {
		case !wasCut || !a.Delta.IsZero() && k.at.Sub(a.Delta) >= settled:
			require.Equal(t, fake, tokens(c.Usage), "%s was written whole before serve died: counted whole", a.ID)
		default:
			require.Equal(t, fake.InputTokens, c.InputTokens, "%s, cut: its input counted once", a.ID)
			require.LessOrEqual(t, c.OutputTokens, fake.OutputTokens, "%s, cut: no more output counted than the fake wrote", a.ID)
			require.Positive(t, c.OutputTokens, "%s, cut: message_start's output counted", a.ID)
			t.Logf("%s, cut %s after its message_start: counted %d input, %d of %d output tokens", a.ID, k.at.Sub(a.Started).Round(time.Millisecond), c.InputTokens, c.OutputTokens, fake.OutputTokens)
			fake.OutputTokens = c.OutputTokens
		}
		want = want.Add(fake)
		delete(byID, a.ID)
	}
	require.Empty(t, byID, "counted calls the fake never answered")
	require.Equal(t, want, tokens(rec.CountedOn(time.Now())), "the store's count is the sum over the fake's messages, each once")
	require.Len(t, kills, rounds)

	g.settle(id, 60*time.Second)
	g.requireIntact(id, expect{prompts: prompts})
	g.ok("check")
	g.stopServe()
	g.requireNowhere(gatewayKey, id)
	require.Equal(t, rounds+1, strings.Count(g.serveLog(), "serving the model gateway on "+g.apiURL+"/model/ to "+g.upstream+", its key from"),
		"every serve held the key, and said so")
}
