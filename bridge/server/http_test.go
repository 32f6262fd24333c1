package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

func TestBadRequests(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	h.prompt("known", "hi")
	h.until(0, 10*time.Second, hasType("result", "", 1))
	huge := `{"id":"big","from":"user:x","text":"` + strings.Repeat("a", bridge.MaxPromptBytes+1) + `"}`
	hugeBody := `{"id":"big","from":"user:x","text":"` + strings.Repeat("a", 7*bridge.MaxPromptBytes) + `"}`

	tests := []struct {
		name, method, path, token, body string
		status                          int
		errContains                     string
	}{
		{"healthz needs no token", "GET", "/healthz", "", "", 200, ""},
		{"readyz needs no token", "GET", "/readyz", "", "", 200, ""},
		{"no token", "GET", "/v1/status", "", "", 401, "bearer token"},
		{"wrong token", "GET", "/v1/status", "wrong", "", 401, "bearer token"},
		{"token prefix", "GET", "/v1/status", testToken[:5], "", 401, "bearer token"},
		{"wrong token on events", "GET", "/v1/events?after=0", "wrong", "", 401, "bearer token"},
		{"negative after", "GET", "/v1/events?after=-1", testToken, "", 400, "after"},
		{"after not a number", "GET", "/v1/events?after=x", testToken, "", 400, "after"},
		{"after beyond the log", "GET", "/v1/events?after=999999", testToken, "", 409, "beyond the last line"},
		{"zero limit", "GET", "/v1/events?limit=0", testToken, "", 400, "limit"},
		{"bad wait", "GET", "/v1/events?wait=soon", testToken, "", 400, "wait"},
		{"negative wait", "GET", "/v1/events?wait=-1s", testToken, "", 400, "wait"},
		{"huge prompt", "POST", "/v1/prompts", testToken, huge, 413, "limit is"},
		{"huge body", "POST", "/v1/prompts", testToken, hugeBody, 413, "request body over"},
		{"prompt without id", "POST", "/v1/prompts", testToken, `{"from":"u","text":"t"}`, 400, "id"},
		{"prompt without sender", "POST", "/v1/prompts", testToken, `{"id":"x","text":"t"}`, 400, "from"},
		{"empty prompt", "POST", "/v1/prompts", testToken, `{"id":"x","from":"u","text":"  "}`, 400, "empty"},
		{"prompt not json", "POST", "/v1/prompts", testToken, `{"id":`, 400, "request body"},
		{"unknown prompt id", "GET", "/v1/prompts/nope", testToken, "", 404, "unknown prompt id"},
		{"wrong method", "GET", "/v1/prompts", testToken, "", 405, "needs POST"},
		{"unknown route", "GET", "/v1/nothing", testToken, "", 404, "no route"},
		{"unknown route without token", "GET", "/v1/nothing", "", "", 401, "bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, h.ts.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := h.ts.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.status, resp.StatusCode, "body: %s", body)
			require.NotContains(t, string(body), testToken, "the token never appears in an answer")
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			if tt.status >= 400 {
				var eb bridge.ErrorBody
				require.NoError(t, json.Unmarshal(body, &eb))
				require.Contains(t, eb.Error, tt.errContains)
			}
		})
	}
	st, err := h.client.Status(context.Background())
	require.NoError(t, err)
	require.Zero(t, st.Queue, "no refused prompt was queued")
}

func TestClientErrors(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	ctx := context.Background()
	bad, err := bridge.NewClient(h.ts.URL, "s3cr3t-but-wrong", h.ts.Client())
	require.NoError(t, err)
	_, err = bad.Status(ctx)
	require.ErrorIs(t, err, bridge.ErrUnauthorized)
	require.NotContains(t, err.Error(), "s3cr3t")
	require.NoError(t, bad.Health(ctx), "health needs no token")

	_, err = h.client.PromptState(ctx, "missing")
	require.ErrorIs(t, err, bridge.ErrNotFound)
	_, err = h.client.Events(ctx, 1<<40, 0, 0)
	require.ErrorIs(t, err, bridge.ErrAhead)

	// A long-poll with nothing to say returns empty after its wait.
	evs := h.until(0, 5*time.Second, hasType("bridge", "bridge_started", 1))
	start := time.Now()
	page, err := h.client.Events(ctx, evs[len(evs)-1].Seq, 10, 150*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, page.Events)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	// The client's own timeout ends a call a server never answers.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	hc, err := bridge.NewClient(hang.URL, testToken, hang.Client())
	require.NoError(t, err)
	start = time.Now()
	_, err = hc.WithTimeout(50 * time.Millisecond).Status(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	_, err = bridge.NewClient("ftp://x", "t", nil)
	require.Error(t, err)
}

// TestTokenInProxyHeader: through the API server's pod proxy the token
// arrives in bridge.TokenHeader, since Authorization carries the API credentials.
func TestTokenInProxyHeader(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	for _, tc := range []struct {
		name, auth, header string
		status             int
	}{
		{"token in the header", "Bearer api-server-credentials", testToken, 200},
		{"wrong token in the header", "", "wrong", 401},
		{"prefix of the token", "", testToken[:len(testToken)-1], 401},
		{"empty header", "", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", h.ts.URL+"/v1/status", nil)
			require.NoError(t, err)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			req.Header.Set(bridge.TokenHeader, tc.header)
			resp, err := h.ts.Client().Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
		})
	}
}

// The bridge is the last hop of an outbox delivered in order: a text
// queued before the intakes refused control characters (an older
// `sporectl prompt` let a CR or an escape through) is still taken, or
// its spore's later prompts would wait behind it forever. Every intake
// refuses such a text before it is queued (bridge.CheckText).
func TestAQueuedTextWithAControlCharacterIsDelivered(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	a, err := h.client.Prompt(context.Background(), bridge.PromptRequest{ID: "old", From: "user:x", Text: "a\r\nb \x1b[0m"})
	require.NoError(t, err, "accepted")
	require.False(t, a.Duplicate)
	h.until(0, 10*time.Second, hasType("result", "", 1))
	a, err = h.client.Prompt(context.Background(), bridge.PromptRequest{ID: "next", From: "user:x", Text: "the next one"})
	require.NoError(t, err)
	h.until(0, 10*time.Second, hasType("result", "", 2))
}
