package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestServeMountsUI: serve's one mux: /ui/ goes to the page, a browser's
// GET / (exactly) is sent to it, everything else goes to the API (its
// routes, or its 404 without detail, a path that is not canonical
// included).
func TestServeMountsUI(t *testing.T) {
	ctx := context.Background()
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o := &serveOptions{f: f}
	ts := httptest.NewServer(o.handler(ctx, &mycelia.Server{Store: st}, st))
	t.Cleanup(ts.Close)
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	do := func(method, p string) (int, http.Header, string) {
		req, err := http.NewRequest(method, ts.URL+p, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}
	get := func(p string) (int, http.Header, string) { return do(http.MethodGet, p) }
	code, hdr, body := get("/ui/static/ui.css")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
	// The store has no operator token: the page says how to make one.
	code, _, body = get("/ui/spores/nobody")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "no operator exists: run `sporectl token create --operator NAME`")
	code, hdr, _ = get("/ui")
	require.Equal(t, http.StatusMovedPermanently, code)
	require.Equal(t, "/ui/", hdr.Get("Location"))
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		code, hdr, _ = do(m, "/")
		require.Equal(t, http.StatusFound, code, m)
		require.Equal(t, "/ui/", hdr.Get("Location"), m)
	}
	notFound := `{"error":"not found","code":"not_found"}`
	for _, c := range []struct {
		method, path string
		status       int
		body         string
	}{
		{http.MethodGet, "/healthz", http.StatusOK, `{"ok":true}`},
		{http.MethodGet, "/api/spores", http.StatusUnauthorized, `{"error":"unauthorized: send Authorization: Bearer <token> and X-Sporectl-Spore: <spore id>","code":"unauthorized"}`},
		{http.MethodGet, "/uix", http.StatusNotFound, notFound},
		{http.MethodGet, "/healthz/", http.StatusNotFound, notFound},
		{http.MethodGet, "/spores//prompt", http.StatusNotFound, notFound},
		{http.MethodGet, "/api/./spores", http.StatusNotFound, notFound},
		{http.MethodPost, "/", http.StatusNotFound, notFound}, // only a browser's GET / is redirected
		{http.MethodPost, "/api/spores", http.StatusNotFound, notFound},
	} {
		code, hdr, body := do(c.method, c.path)
		require.Equal(t, c.status, code, "%s %s: %s", c.method, c.path, body)
		require.JSONEq(t, c.body, body, "%s %s", c.method, c.path)
		require.Empty(t, hdr.Get("Content-Security-Policy"), c.path)
	}
	// The page's methods: what is registered with POST, and 405 elsewhere.
	code, hdr, _ = do(http.MethodDelete, "/ui/spores/nobody")
	require.Equal(t, http.StatusForbidden, code, "the access check comes first")
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
}

// TestServeUIOperators: without an operator token serve's page answers
// 403 saying how to make one (loopback too); with one made by `token
// create` it asks for a login, takes the token, and its prompt box sends
// as the operator; once every token is revoked it is closed again.
func TestServeUIOperators(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake")
	st, err := dirstore.Open(context.Background(), c.store, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.Getenv = func(k string) string {
		if k == "USER" {
			return "dora"
		}
		return ""
	}
	f.Now = func() time.Time { return c.now }
	f.NewRuntime = func(context.Context, state.Store, state.Settings) (reconcile.Runtime, error) { return c.rt, nil }
	f.Dial = c.rt.Dial
	o := &serveOptions{f: f}
	ts := httptest.NewServer(o.handler(context.Background(), &mycelia.Server{Store: st}, st))
	t.Cleanup(ts.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := *ts.Client()
	client.Jar = jar
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	do := func(method, p string, form url.Values) (int, http.Header, string) {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, ts.URL+p, body)
		require.NoError(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", ts.URL)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, _, body := do(http.MethodGet, "/ui/spores/a", nil)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "no operator exists: run `sporectl token create --operator NAME`")
	require.NotContains(t, body, "<form")

	token := strings.TrimSpace(c.ok("token", "create", "--operator", "alice"))
	code, hdr, _ := do(http.MethodGet, "/ui/", nil)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/ui/login?next=%2Fui%2F", hdr.Get("Location"))
	code, _, _ = do(http.MethodPost, "/ui/login", url.Values{"token": {token}})
	require.Equal(t, http.StatusSeeOther, code)
	code, _, body = do(http.MethodGet, "/ui/spores/a", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `sent as <span class="as">user:alice</span>`)

	// The prompt box and `sporectl prompt` record the same: one prompt
	// event each, with the sender and text, and a delivery to the bridge.
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, csrf)
	code, hdr, body = do(http.MethodPost, "/ui/spores/a/prompt", url.Values{"csrf": {csrf[1]}, "text": {"from the page"}})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Equal(t, "/ui/spores/a", hdr.Get("Location"))
	c.ok("prompt", "a", "from the terminal", "--from", "user:alice")
	var prompts []state.Event
	require.NoError(t, st.View(context.Background(), func(tx state.Tx) error {
		evs, err := tx.Events(context.Background(), "a", 0, 1000)
		for _, ev := range evs {
			if ev.Kind == state.KindPrompt {
				ev.Seq, ev.Text = 0, ""
				prompts = append(prompts, ev)
			}
		}
		return err
	}))
	require.Len(t, prompts, 2)
	require.Equal(t, prompts[1], prompts[0], "the same event but for its text")
	require.Equal(t, "user:alice", prompts[0].From)
	sent := c.rt.BridgeOf("a").Prompts()
	require.Len(t, sent, 2)
	require.Equal(t, "from the page", sent[0].Text)
	require.Equal(t, "from the terminal", sent[1].Text)

	c.ok("token", "create", "--operator", "bob")
	c.ok("token", "revoke", "--operator", "alice")
	code, _, _ = do(http.MethodGet, "/ui/spores/a", nil)
	require.Equal(t, http.StatusSeeOther, code, "revoked: the session ended")
	// With no operator token left, the page is closed to everyone.
	c.ok("token", "revoke", "--operator", "bob")
	code, _, body = do(http.MethodGet, "/ui/spores/a", nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "no operator exists")
}
