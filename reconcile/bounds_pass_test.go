package reconcile_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// Bounds on what a bridge says (issue 35 item 4 and 6; docs/bridge.md
// "An untrusted answer"): a bridge is its agent's, and the agent runs
// arbitrary code, so each test here plays a hostile bridge and checks
// that only its own spore pays.

// awake starts ids (their fake bridges answer from then on).
func (e *env) awake(ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		e.setDesired(id, state.Running)
	}
	e.heal()
}

// colony sets colony lab's settings.
func (e *env) colony(c state.ColonySettings) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		return tx.PutSettings(ctx, s.WithColony("lab", c))
	}))
}

// lastHealth is the text of id's last health event.
func (e *env) lastHealth(id string) string {
	e.t.Helper()
	evs := e.events(id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Action == "health" {
			return evs[i].Text
		}
	}
	return ""
}

// countingBody counts what the client read of answers.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, t.n}
	}
	return resp, err
}

// A bridge serving a 40 MB line, over HTTP with the real client: the pass
// reads no more than the contract's bound of a page, makes that spore
// Suspect (ContractBreach) keeping its lines before the breach, and
// ingests every other spore's lines as usual. Before, the client read and
// decoded the line whole (585 MB for a 50 MB line) and the line was never
// ingested, the spore shown Healthy.
func TestPassReadsABoundOfAHostileBridgesLongLineAndGoesOn(t *testing.T) {
	e := newEnv(t, "a", "b", "c")
	e.awake("a", "b", "c")
	h := reconciletest.NewHTTP(e.rt)
	defer h.Close()
	var read atomic.Int64
	pass := e.pass()
	// The pass must meet the breach, not its deadlines: on a loaded
	// machine under the race detector, 10 s were once too few to read the
	// page's bound, and a fetch cut by the deadline is no breach. The
	// bridge client's own per-call bound (bridge.DefaultTimeout, 10 s)
	// too: the fake bridge writes the 40 MB line's page before the first
	// byte reaches the client, which took longer under the same load.
	pass.ObserveDeadline, pass.IngestDeadline = 5*time.Minute, 5*time.Minute
	pass.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) { return h.Runtime(), nil }
	pass.Dial = func(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
		c, err := bridge.NewClient(ep.BaseURL, ep.Token, &http.Client{Transport: countingTransport{ep.Client.Transport, &read}})
		if err != nil {
			return nil, err
		}
		return c.WithTimeout(5 * time.Minute), nil
	}
	const huge = 40 << 20
	e.rt.BridgeOf("a").Write(`{"n":1}`, `"`+strings.Repeat("x", huge)+`"`, `{"n":3}`)
	e.rt.BridgeOf("b").Write(`{"n":1}`, `{"n":2}`)
	e.rt.BridgeOf("c").Write(`{"n":1}`)

	for range 2 {
		read.Store(0)
		out, err := pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
		require.NoError(t, err)
		a := health(out, "a")
		require.Equal(t, policy.Suspect, a.Effective)
		require.Equal(t, reconcile.ReasonContractBreach, a.Code)
		require.Equal(t, reconcile.ReasonContractBreach, a.Observed.Reason, "status shows the breach without -v")
		require.Equal(t, []uint64{1}, agentSeqs(e.events("a")), "the line before the breach is kept, nothing from it on")
		require.Equal(t, policy.Healthy, health(out, "b").Effective)
		require.Equal(t, policy.Healthy, health(out, "c").Effective)
		require.Equal(t, []uint64{1, 2}, agentSeqs(e.events("b")))
		require.Equal(t, []uint64{1}, agentSeqs(e.events("c")))
		// Every page of a pass (a's two, b's, c's, and the statuses) is
		// read, but the long line only up to the page's bound.
		require.Less(t, read.Load(), int64(bridge.MaxEventsAnswerBytes+1<<20), "the client read the hostile line")
	}
	require.Contains(t, e.lastHealth("a"), "GET /v1/events: an answer longer than")
	n := len(e.events("a"))
	e.run(reconcile.Options{})
	require.Len(t, e.events("a"), n, "the breach is one event, not one per pass")
}

// A page that breaks the contract in its numbers or its size (the fake
// bridge in process, as a hostile one would answer): Suspect with the
// breach named, the lines before it kept.
func TestPassCallsABridgesBrokenPageABreach(t *testing.T) {
	for name, tc := range map[string]struct {
		page   func(after uint64) bridge.Events
		detail string
	}{
		"more events than asked": {func(after uint64) bridge.Events {
			evs := make([]bridge.Event, bridge.MaxLimit+1)
			for i := range evs {
				evs[i] = bridge.Event{Seq: after + 1 + uint64(i), Line: json.RawMessage(`{}`)}
			}
			return bridge.Events{Events: evs, LastSeq: after + uint64(len(evs))}
		}, "5001 events where at most 5000 were asked for"},
		"numbers going back": {func(after uint64) bridge.Events {
			return bridge.Events{Events: []bridge.Event{{Seq: after + 2, Line: json.RawMessage(`{}`)}, {Seq: after + 1, Line: json.RawMessage(`{}`)}}, LastSeq: after + 2}
		}, "numbers must rise"},
		"a line over the bound": {func(after uint64) bridge.Events {
			return bridge.Events{Events: []bridge.Event{{Seq: after + 1, Line: json.RawMessage(`"` + strings.Repeat("x", bridge.MaxLineBytes) + `"`)}}, LastSeq: after + 1}
		}, "over the 1048576-byte bound of a line"},
		"last_seq below its lines": {func(after uint64) bridge.Events {
			return bridge.Events{Events: []bridge.Event{{Seq: after + 1, Line: json.RawMessage(`{}`)}}, LastSeq: after}
		}, "last_seq 1 below its own line 2"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "a", "b")
			e.awake("a", "b")
			e.rt.BridgeOf("a").Write(`{"n":1}`)
			e.heal()
			e.rt.BridgeOf("a").Write(`{"n":2}`, `{"n":3}`)
			e.rt.BridgeOf("b").Write(`{"n":1}`)
			pass := e.pass()
			pass.Dial = func(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
				c, err := e.rt.Dial(ep)
				if ep.BaseURL == "fake://a" {
					return hostilePage{BridgeClient: c, page: tc.page}, err
				}
				return c, err
			}
			out, err := pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
			require.NoError(t, err)
			require.Equal(t, reconcile.ReasonContractBreach, health(out, "a").Code)
			require.Equal(t, []uint64{1}, agentSeqs(e.events("a")))
			require.Contains(t, e.lastHealth("a"), tc.detail)
			require.Equal(t, policy.Healthy, health(out, "b").Effective)
			require.Equal(t, []uint64{1}, agentSeqs(e.events("b")))
		})
	}
}

// hostilePage answers every page after the first line with page.
type hostilePage struct {
	reconcile.BridgeClient
	page func(after uint64) bridge.Events
}

func (h hostilePage) Events(ctx context.Context, after uint64, limit int, wait time.Duration) (bridge.Events, error) {
	if after == 0 {
		// The line the store holds, asked to check it is the same.
		return h.BridgeClient.Events(ctx, after, limit, wait)
	}
	return h.page(after), nil
}

// mibLine is a JSON string line of n bytes in all.
func mibLine(n int) string { return `"` + strings.Repeat("y", n-2) + `"` }

// A pass takes at most 2 MiB of one bridge's lines; the rest waits in
// the bridge's log for the next pass, and nothing is wrong with that.
// Before, a pass took up to 50,000 lines whatever their size.
func TestPassTakesABoundOfBytesFromOneBridge(t *testing.T) {
	e := newEnv(t, "a")
	e.awake("a")
	line := mibLine(1<<20 - 64)
	e.rt.BridgeOf("a").Write(line, line, line, line, line)
	for _, want := range []int{2, 4, 5} {
		out := e.heal()
		require.Equal(t, policy.Healthy, health(out, "a").Effective)
		require.Len(t, agentSeqs(e.events("a")), want, "two lines of just under 1 MiB a pass")
	}
	require.Equal(t, int64(5*len(line)), e.spore("a").Activity[0].StoredBytes, "the bytes stored are counted")
}

// At most 50,000 lines per pass from one bridge, however small.
func TestPassTakesABoundOfLinesFromOneBridge(t *testing.T) {
	e := newEnv(t, "a")
	e.awake("a")
	lines := make([]string, 50_007)
	for i := range lines {
		lines[i] = `{}`
	}
	e.rt.BridgeOf("a").Write(lines...)
	e.heal()
	require.Len(t, agentSeqs(e.events("a")), 50_000)
	e.heal()
	require.Len(t, agentSeqs(e.events("a")), 50_007)
}

// Over its colony's ingest quota, a spore is Suspect (IngestQuota) and
// nothing more of it is stored that day; its bridge keeps the rest, taken
// the next day. Before, there was no quota.
func TestPassStopsStoringAtTheDailyQuota(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.colony(state.ColonySettings{IngestQuotaMiB: 1})
	e.awake("a", "b")
	line := mibLine(600 << 10)
	e.rt.BridgeOf("a").Write(line, line, line)
	e.rt.BridgeOf("b").Write(`{"n":1}`)

	out := e.heal()
	require.Equal(t, policy.Suspect, health(out, "a").Effective)
	require.Equal(t, reconcile.ReasonIngestQuota, health(out, "a").Code)
	require.Equal(t, []uint64{1}, agentSeqs(e.events("a")), "the second line would pass the quota")
	require.Contains(t, e.lastHealth("a"), "daily ingest quota of 1.0 MiB")
	require.Equal(t, policy.Healthy, health(out, "b").Effective)
	n := len(e.events("a"))
	out = e.heal()
	require.Equal(t, reconcile.ReasonIngestQuota, health(out, "a").Code)
	require.Len(t, e.events("a"), n, "nothing stored after, and the quota is one event")

	e.now = e.now.Add(24 * time.Hour)
	e.heal()
	require.Equal(t, []uint64{1, 2}, agentSeqs(e.events("a")), "a new day: one more line of the quota")
	e.now = e.now.Add(24 * time.Hour)
	out = e.heal()
	require.Equal(t, []uint64{1, 2, 3}, agentSeqs(e.events("a")))
	require.Equal(t, policy.Healthy, health(out, "a").Effective, "nothing waits: healthy again")
}

// A result line claiming 9e18 tokens is a contract breach recorded on its
// spore, counted as no spend: the colony's budget is not spent by it, and
// a neighbour is not held back. Before, it saturated the colony's spend
// for the day.
func TestPassCountsAForgedUsageAsABreachNotAsSpend(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.colony(state.ColonySettings{Budget: state.Budget{TokensPerDay: 1000}})
	e.awake("a", "b")
	e.rt.BridgeOf("a").Write(`{"type":"result","subtype":"success","total_cost_usd":0.01,"usage":{"input_tokens":9000000000000000000,"output_tokens":4}}`)

	out := e.heal()
	a := health(out, "a")
	require.Equal(t, reconcile.ReasonContractBreach, a.Code)
	require.Empty(t, a.OverBudget)
	require.Empty(t, health(out, "b").OverBudget, "the neighbour is within the colony's budget")
	require.Equal(t, state.Spend{Tokens: 0, CostMicros: 0}, *health(out, "b").Spend)
	require.Equal(t, []uint64{1}, agentSeqs(e.events("a")), "the line is kept as the conversation")
	require.Contains(t, e.lastHealth("a"), "line 1 claims 9000000000000000000 input tokens")
	require.Equal(t, int64(0), e.spore("a").Activity[0].InputTokens)
	require.Equal(t, int64(1), e.spore("a").Activity[0].Turns)

	out = e.heal()
	require.Equal(t, policy.Healthy, health(out, "a").Effective, "recorded once; the next pass finds nothing wrong")
	require.Equal(t, state.Running, e.spore("b").Desired, "nobody slept for it")
}

// A usage line its bridge stamped long ago counts in today's spend: the
// bridge's time is the agent's word. Before, a line stamped before today
// escaped today's budget.
func TestPassCountsABackDatedUsageToday(t *testing.T) {
	e := newEnv(t, "a")
	direct(t, e.st) // the agent's report is what budgets judge
	e.awake("a")
	ctx := context.Background()
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "a")
		if err != nil {
			return err
		}
		sp.Budget, sp.Generation = state.Budget{TokensPerDay: 100}, sp.Generation+1
		return tx.PutWish(ctx, sp.Wish)
	}))
	// The fake bridge stamps its lines on 2026-01-01; the pass runs in November.
	e.rt.BridgeOf("a").Write(`{"type":"result","total_cost_usd":0.5,"usage":{"input_tokens":100,"output_tokens":50}}`)
	out := e.heal()
	require.Equal(t, "150/100 tokens today", health(out, "a").OverBudget)
}

// A status whose state is none of the five, holding an ESC and a
// right-to-left override, is a breach: the state is never shown, and no
// control character reaches the result.
func TestPassNeverShowsABridgesStateRaw(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.awake("a", "b")
	e.rt.BridgeOf("a").SetState("idle\x1b]8;;http://evil\x07\u202eelbuoda")
	out := e.heal()
	a := health(out, "a")
	require.Equal(t, policy.Suspect, a.Effective)
	require.Equal(t, reconcile.ReasonContractBreach, a.Code)
	require.Empty(t, a.Observed.Activity)
	require.Equal(t, policy.Healthy, health(out, "b").Effective)
	b, err := json.Marshal(out.Result)
	require.NoError(t, err)
	for _, s := range []string{"\x1b", "\\u001b", "\u202e", "\\u202e", "evil"} {
		require.NotContains(t, string(b), s)
		require.NotContains(t, a.Reason, s)
		require.NotContains(t, e.lastHealth("a"), s)
	}
	require.Contains(t, e.lastHealth("a"), "none of starting, idle, working, blocked, backoff")
}

// A bridge whose page of events is not JSON (a bare, unquoted line) is a
// breach that status shows, not a failed fetch seen only under -v while
// the spore shows Healthy and nothing is ingested.
func TestPassShowsABridgeAnsweringNotJSON(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.awake("a", "b")
	e.rt.BridgeOf("b").Write(`{"n":1}`)
	h := reconciletest.NewHTTP(e.rt)
	defer h.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"state":"idle","last_seq":1,"healthy":true}`)
	})
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"events":[{"seq":1,"at":"2026-01-01T00:00:00Z","line":not json from the agent}],"last_seq":1}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	pass := e.pass()
	pass.Dial = reconcile.DialHTTP
	pass.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) {
		return &hostileRuntime{Runtime: h.Runtime(), hostile: map[string]string{"a": srv.URL}}, nil
	}
	out, err := pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	a := health(out, "a")
	require.Equal(t, policy.Suspect, a.Effective)
	require.Equal(t, reconcile.ReasonContractBreach, a.Observed.Reason)
	require.Contains(t, e.lastHealth("a"), "an answer that is not JSON")
	require.Equal(t, policy.Healthy, health(out, "b").Effective)
	require.Equal(t, []uint64{1}, agentSeqs(e.events("b")))
}
