package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/mycelia/gateway"
	"github.com/sporectl/sporectl/state"
)

// TestClientLeaves: a spore that hangs up ends the upstream's call too.
func TestClientLeaves(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.up.fake.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Slow(time.Minute, "late")}})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+"/model/v1/messages", strings.NewReader(streamed))
	require.NoError(t, err)
	req.Header.Set("x-api-key", w.key("w1"))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return w.up.calls() == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return w.up.canceled.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the upstream's call ended with the spore's, not after its minute")
	require.Equal(t, state.Usage{}, w.counted("w1"))
}

// TestStoreFailsMidStream: a count that cannot be written cuts the answer
// there: the spore got what was counted (message_start) and a failed
// request, never the part whose usage is not counted.
func TestStoreFailsMidStream(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.up.fake.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Text("a longer answer that is cut")}})
	// The first write (message_start's count) is made, the second
	// (message_delta's) fails.
	w.store.failFrom.Store(w.store.updates.Load() + 2)
	a := w.call(w.key("w1"), "/model/v1/messages", streamed)
	require.Equal(t, http.StatusOK, a.status)
	require.Error(t, a.err, "the spore sees a failed request")
	require.Contains(t, a.body, "message_start")
	require.NotContains(t, a.body, "message_delta", "the event whose usage was not counted never passed")
	require.NotContains(t, a.body, "message_stop")
	require.Equal(t, state.Usage{InputTokens: 100, OutputTokens: 1, CostMicros: 315}, w.counted("w1"))
	require.Contains(t, w.logs.String(), "could not count a model call")

	// A whole answer not counted is not given at all.
	w.store.failFrom.Store(w.store.updates.Load() + 1)
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), http.StatusBadGateway, "api_error", "could not count")
	require.Equal(t, state.Usage{InputTokens: 100, OutputTokens: 1, CostMicros: 315}, w.counted("w1"))
}

// TestUpstreamDown: an upstream that cannot be reached is a 502 in the
// API's shape that names neither the key nor the token.
func TestUpstreamDown(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.up.srv.Close()
	a := w.call(w.key("w1"), "/model/v1/messages", whole)
	requireRefusal(t, a, http.StatusBadGateway, "api_error", "could not reach")
	require.NotContains(t, a.body+w.logs.String(), w.tokens["w1"])
	require.Contains(t, w.logs.String(), "the upstream did not answer")
}

// TestNoKey: a serve without a model key refuses every call, after the
// caller proved itself.
func TestNoKey(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	up, err := url.Parse(w.up.srv.URL)
	require.NoError(t, err)
	gw := gateway.New(gateway.Config{Store: w.store, Auth: auth.Authenticator{Store: w.store}, Upstream: up})
	mux := http.NewServeMux()
	gw.Register(mux)
	w.srv.Config.Handler = mux
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), http.StatusServiceUnavailable, "api_error", "holds no model key")
	requireRefusal(t, w.call("w1:spt_wrong", "/model/v1/messages", whole), http.StatusUnauthorized, "authentication_error", "")
	require.Zero(t, w.up.calls())
}

// TestStoreDown: without the store nobody is let through: the key cannot
// be checked (503, the API's shape), and nothing reaches the upstream.
func TestStoreDown(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.store.viewsFail.Store(true)
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), http.StatusServiceUnavailable, "api_error", "cannot read the store")
	require.Zero(t, w.up.calls())
	require.NotContains(t, w.logs.String(), w.tokens["w1"])
}

// TestLongerThanServesTimeouts: a call whose answer takes longer than
// the server's read and write timeouts (serve's: 30 s and 2 minutes) is
// answered whole: the gateway's calls are bounded by MaxCall instead.
func TestLongerThanServesTimeouts(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	w.srv.Close()
	w.srv = httptest.NewUnstartedServer(w.srv.Config.Handler)
	w.srv.Config.ReadTimeout, w.srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	w.srv.Start()
	t.Cleanup(w.srv.Close)
	w.up.fake.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Slow(time.Second, "late but whole")}})
	a := w.call(w.key("w1"), "/model/v1/messages", streamed)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NoError(t, a.err)
	require.Contains(t, a.body, "message_stop")
	require.Zero(t, w.up.canceled.Load())
}

// TestServeGoneMidStream: serve dies after passing on message_start: the
// spore sees a failed request, and what it was given is counted. Another
// replica answering the same message whole then adds only what was not
// counted: nothing twice.
func TestServeGoneMidStream(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	start := `{"type":"message_start","message":{"id":"msg_cut","model":"claude-sonnet-4-5","usage":{"input_tokens":1000,"output_tokens":1}}}`
	delta := `{"type":"message_delta","usage":{"output_tokens":50}}`
	release := make(chan struct{})
	w.up.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = rw.Write([]byte("event: message_start\ndata: " + start + "\n\n"))
		rw.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = rw.Write([]byte("event: message_delta\ndata: " + delta + "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	})
	req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/model/v1/messages", strings.NewReader(streamed))
	require.NoError(t, err)
	req.Header.Set("x-api-key", w.key("w1"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, len(start))
	_, err = io.ReadAtLeast(resp.Body, buf, 20)
	require.NoError(t, err)
	require.Equal(t, state.Usage{InputTokens: 1000, OutputTokens: 1, CostMicros: 3015}, w.counted("w1"), "what the spore was given is counted")

	w.srv.CloseClientConnections() // serve is gone
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err, "the spore sees a failed request")

	close(release) // another replica gets the whole answer of the same message
	w2 := gateway.New(gateway.Config{Store: w.store, Auth: auth.Authenticator{Store: w.store}, Upstream: mustURL(t, w.up.srv.URL), Key: theKey,
		Now: func() time.Time { return w.now }})
	mux := http.NewServeMux()
	w2.Register(mux)
	srv2 := httptest.NewServer(mux)
	defer srv2.Close()
	w.srv = srv2
	a := w.call(w.key("w1"), "/model/v1/messages", streamed)
	require.NoError(t, a.err)
	require.Contains(t, a.body, "message_stop")
	require.Equal(t, state.Usage{InputTokens: 1000, OutputTokens: 50, CostMicros: 3750}, w.counted("w1"), "the start once, the delta's growth once")
}

func mustURL(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
