package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestCounted: a streamed and a whole answer are each counted once, from
// the upstream's own usage, under its message id, and passed on whole;
// the upstream got the key and none of the spore's credentials.
func TestCounted(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.up.fake.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Text("twelve chars")}})

	a := w.call(w.key("w1"), "/model/v1/messages?beta=true", streamed)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NoError(t, a.err)
	require.Contains(t, a.body, "event: message_stop")
	require.Contains(t, a.body, `"twelve chars"`[1:5])
	// message_start: 100 in, 1 out; message_delta: 4 out in all.
	require.Equal(t, state.Usage{InputTokens: 100, OutputTokens: 4, CostMicros: 360}, w.counted("w1"))
	h := w.up.lastHeader()
	require.Equal(t, theKey, h.Get("X-Api-Key"))
	require.Empty(t, h.Get("Authorization"))
	require.Empty(t, h.Get("X-Sporectl-Spore"))
	require.Equal(t, "2023-06-01", h.Get("Anthropic-Version"))
	require.NotContains(t, strings.Join(h.Values("X-Api-Key"), ""), w.tokens["w1"])

	a = w.call(w.key("w1"), "/model/v1/messages", whole)
	require.Equal(t, http.StatusOK, a.status, a.body)
	var m struct {
		ID    string `json:"id"`
		Usage struct {
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &m))
	require.Equal(t, "msg_fake_000002", m.ID)
	require.Equal(t, state.Usage{InputTokens: 200, OutputTokens: 8, CostMicros: 720}, w.counted("w1"))

	sp := statetest.Spore(t, w.store.Store, "w1")
	require.Len(t, sp.ModelCalls, 2)
	require.Equal(t, int64(2), sp.ModelUsage[0].Calls)
	require.True(t, sp.Activity == nil, "the bridge's report is left alone")
	// A call's answer is reported once it has ended, which may be just
	// after the client read it.
	require.Eventually(t, func() bool {
		w.metrics.mu.Lock()
		defer w.metrics.mu.Unlock()
		return w.metrics.requests["lab OK"] == 2
	}, 5*time.Second, 10*time.Millisecond)
	w.metrics.mu.Lock()
	defer w.metrics.mu.Unlock()
	require.Equal(t, map[string]int{"lab OK": 2}, w.metrics.requests)
	require.Equal(t, state.Usage{InputTokens: 200, OutputTokens: 8, CostMicros: 720}, w.metrics.tokens["lab"])
	require.Equal(t, 2, w.metrics.upstream)
}

// TestCountTokens: count_tokens passes (Claude Code asks it) and costs
// nothing.
func TestCountTokens(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	a := w.call(w.key("w1"), "/model/v1/messages/count_tokens", whole)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.JSONEq(t, `{"input_tokens":100}`, a.body)
	require.Equal(t, state.Usage{}, w.counted("w1"))
}

// TestCountedOnceByID: the same message counted again (another replica,
// a retried event) adds nothing; only what a later report has beyond it.
func TestCountedOnceByID(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	// Two gateways (two serve replicas) over one store, one upstream
	// answering the same message twice.
	same := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_same","model":"claude-haiku-4-5","usage":{"input_tokens":10,"output_tokens":1}}}`,
			`{"type":"message_delta","usage":{"output_tokens":5}}`,
			`{"type":"message_delta","usage":{"output_tokens":5}}`,
			`{"type":"message_stop"}`,
		} {
			_, _ = rw.Write([]byte("event: x\ndata: " + ev + "\n\n"))
		}
	})
	w.up.srv.Config.Handler = same
	for range 3 {
		a := w.call(w.key("w1"), "/model/v1/messages", streamed)
		require.Equal(t, http.StatusOK, a.status, a.body)
	}
	// haiku 4.5: 10 × $1 + 5 × $5 per million: 35 millionths.
	require.Equal(t, state.Usage{InputTokens: 10, OutputTokens: 5, CostMicros: 35}, w.counted("w1"))
	require.Equal(t, int64(1), statetest.Spore(t, w.store.Store, "w1").ModelUsage[0].Calls)
}

// TestRefused: a call the gateway refuses is answered in the Messages
// API's error shape, with the status Claude Code acts on, and nothing of
// it reaches the upstream.
func TestRefused(t *testing.T) {
	w := newWorld(t, state.Settings{ModelCallsPerMinute: 2})
	w.spore("w1")
	w.spore("asleep", desired(state.Paused))
	w.spore("stopped", desired(state.Stopped))
	w.spore("gone")
	goneKey := w.key("gone")
	require.NoError(t, w.store.Store.Update(context.Background(), func(tx state.Tx) error { return tx.DeleteSpore(context.Background(), "gone") }))
	w.spore("limited")
	for _, tc := range []struct {
		name, key, path, body string
		status                int
		typ, says             string
	}{
		{"no key", "", "/model/v1/messages", whole, 401, "authentication_error", "ID:TOKEN"},
		{"a wrong token", "w1:spt_wrong", "/model/v1/messages", whole, 401, "authentication_error", ""},
		{"the real key", theKey, "/model/v1/messages", whole, 401, "authentication_error", ""},
		{"a deleted spore", goneKey, "/model/v1/messages", whole, 401, "authentication_error", ""},
		{"an asleep spore", w.key("asleep"), "/model/v1/messages", whole, 403, "permission_error", "spore asleep is asleep"},
		{"a stopped spore", w.key("stopped"), "/model/v1/messages", whole, 403, "permission_error", "spore stopped is stopped"},
		{"a path it does not pass", w.key("w1"), "/model/v1/models", "", 404, "not_found_error", "POST /v1/messages"},
		{"a path it does not pass, no key", "", "/model/v1/complete", "", 404, "not_found_error", ""},
		{"a body too large", w.key("w1"), "/model/v1/messages", strings.Repeat("x", 32<<20+1), 413, "request_too_large", "32 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.up.calls()
			a := w.call(tc.key, tc.path, tc.body)
			requireRefusal(t, a, tc.status, tc.typ, tc.says)
			require.Equal(t, before, w.up.calls(), "nothing reached the upstream")
		})
	}
	t.Run("a body too large without a length", func(t *testing.T) {
		before := w.up.calls()
		req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/model/v1/messages", struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 32<<20+10))})
		require.NoError(t, err)
		req.Header.Set("x-api-key", w.key("w1"))
		requireRefusal(t, w.do(req), 413, "request_too_large", "32 MiB")
		require.Equal(t, before, w.up.calls(), "the upstream was given nothing of it")
	})
	t.Run("over the rate", func(t *testing.T) {
		for range 2 {
			require.Equal(t, http.StatusOK, w.call(w.key("limited"), "/model/v1/messages", whole).status)
		}
		before := w.up.calls()
		a := w.call(w.key("limited"), "/model/v1/messages", whole)
		requireRefusal(t, a, 429, "rate_limit_error", "2 model calls in a minute")
		require.Equal(t, "30", a.header.Get("Retry-After"))
		require.Equal(t, before, w.up.calls())
		// The clock moves on half a minute: one call's worth is back.
		w.now = w.now.Add(30 * time.Second)
		require.Equal(t, http.StatusOK, w.call(w.key("limited"), "/model/v1/messages", whole).status)
	})
}

func requireRefusal(t *testing.T, a answer, status int, typ, says string) {
	t.Helper()
	require.Equal(t, status, a.status, a.body)
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &e), a.body)
	require.Equal(t, "error", e.Type)
	require.Equal(t, typ, e.Error.Type)
	require.Contains(t, e.Error.Message, says)
}
