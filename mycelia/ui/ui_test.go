package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ui")

// t0 is the fixed time of the golden fixtures.
var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// xss is what hostile agents, people and spores write.
const xss = `<script>alert(1)</script>`

// recordingStore records every Events and Tail read, so a test can say
// how much a request read.
type recordingStore struct {
	state.Store
	mu    sync.Mutex
	reads []string
}

func (s *recordingStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(&recordingTx{Tx: tx, s: s}) })
}

func (s *recordingStore) log(f string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, fmt.Sprintf(f, a...))
}

func (s *recordingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reads
	s.reads = nil
	return r
}

type recordingTx struct {
	state.Tx
	s *recordingStore
}

func (t *recordingTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	t.s.log("events %s after=%d limit=%d", id, after, limit)
	return t.Tx.Events(ctx, id, after, limit)
}

func (t *recordingTx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	t.s.log("tail %s n=%d", id, n)
	return t.Tx.Tail(ctx, id, n)
}

type fixture struct {
	t  *testing.T
	st *recordingStore
	rt *reconciletest.Runtime
	h  *Handler
	ts *httptest.Server
	// session is the fixture operator's cookie.
	session *http.Cookie
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ds := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	f := &fixture{t: t, st: &recordingStore{Store: ds}, rt: reconciletest.New()}
	pass := reconciletest.NewPass(t, f.st, reconciletest.WithFake(f.rt), reconciletest.At(t0.Add(time.Hour)))
	// FollowEvery: no pass behind a test's back (count reads, compare
	// goldens); the tests of following set it. FleetShare: each fleet
	// page load reads afresh, so a test sees what it just changed; the
	// tests of sharing set it.
	f.h = &Handler{Store: f.st, Pass: pass, Now: func() time.Time { return t0.Add(time.Hour) }, Poll: 10 * time.Millisecond,
		Nonce: func() string { return "TESTNONCE" }, FollowEvery: -1, FleetShare: -1}
	f.ts = httptest.NewServer(f.h)
	t.Cleanup(f.ts.Close)
	f.session = f.loginAs(f.ts.Client(), fixtureOperator, fixtureToken)
	return f
}

// The fixture's operator: its token is fixed, so the session cookie and
// the CSRF token on the golden pages are too. Every request of f.get and
// f.ts.Client() carries its session; f.user() is a browser without one.
const (
	fixtureOperator = "tester"
	fixtureToken    = "spo_the-fixture-operator-token-fixed-for-goldens"
)

// loginAs stores name's token (next to any others) and gives client a
// session cookie for it, as POST /ui/login would (expiring an hour after
// the fixture's clock).
func (f *fixture) loginAs(client *http.Client, name, token string) *http.Cookie {
	f.t.Helper()
	ctx := context.Background()
	key := state.OperatorSessionKey(token)
	require.NoError(f.t, f.h.Store.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		ops := append(s.OperatorTokens(), state.OperatorToken{Name: name, Hash: state.HashToken(token), Session: state.SessionHash(key), Created: t0})
		return tx.PutSettings(ctx, s.WithOperators(ops))
	}))
	c := &http.Cookie{Name: SessionCookie, Value: newSession(name, key, t0.Add(2*time.Hour)), Path: Prefix}
	jar, err := cookiejar.New(nil)
	require.NoError(f.t, err)
	base, err := url.Parse(f.ts.URL + Prefix)
	require.NoError(f.t, err)
	jar.SetCookies(base, []*http.Cookie{c})
	client.Jar = jar
	return c
}

// benchSession stores the fixture operator's token in st (once) and
// returns its session cookie, for benchmarks that build their own handler.
func benchSession(tb testing.TB, st state.Store) *http.Cookie {
	tb.Helper()
	ctx := context.Background()
	key := state.OperatorSessionKey(fixtureToken)
	err := st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		for _, op := range s.OperatorTokens() {
			if op.Name == fixtureOperator {
				return nil
			}
		}
		ops := append(s.OperatorTokens(), state.OperatorToken{Name: fixtureOperator, Hash: state.HashToken(fixtureToken), Session: state.SessionHash(key), Created: t0})
		return tx.PutSettings(ctx, s.WithOperators(ops))
	})
	require.NoError(tb, err)
	// Valid for every benchmark's clock: the spore pages' t0+1h and the
	// fleet page's 12:30, under SessionLifetime from each.
	return &http.Cookie{Name: SessionCookie, Value: newSession(fixtureOperator, key, t0.Add(8*time.Hour)), Path: Prefix}
}

// request is a request straight to the handler, from loopback, with the
// fixture's session.
func (f *fixture) request(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	req.AddCookie(f.session)
	return req
}

// add creates sp (created at t0) with evs in its log; awake ones are
// started on the fake runtime.
func (f *fixture) add(sp state.Spore, awake bool, evs ...state.Event) {
	f.t.Helper()
	ctx := context.Background()
	sp.Created, sp.Updated, sp.Desired = t0, t0, state.Paused
	if awake {
		sp.Desired = state.Running
	}
	require.NoError(f.t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		_, err := tx.Append(ctx, sp.ID, evs)
		return err
	}))
	if awake {
		require.NoError(f.t, f.rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	}
}

func (f *fixture) append(id string, evs ...state.Event) {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, id, evs)
		return err
	}))
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (f *fixture) get(path string, hdr ...string) answer {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.ts.URL+path, nil)
	require.NoError(f.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := f.ts.Client().Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func prompt(min int, from, text string) state.Event {
	return state.Event{Kind: state.KindPrompt, At: at(min), From: from, Text: text}
}

func lifecycle(min int, action, text string) state.Event {
	return state.Event{Kind: state.KindLifecycle, At: at(min), Action: action, Text: text}
}

func agent(min int, v any) state.Event {
	b, _ := json.Marshal(v)
	return state.Event{Kind: state.KindAgent, At: at(min), Line: b}
}

func text(min int, s string) state.Event {
	return agent(min, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}}})
}

func toolUse(min int, name string, input any) state.Event {
	return agent(min, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": name, "input": input}}}})
}

func toolResult(min int, isErr bool, content string) state.Event {
	return agent(min, map[string]any{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "tu1", "is_error": isErr, "content": content}}}})
}

// colony is the fleet of the golden pages:
//
//	arch    [arch]  colony lab        awake, idle
//	lab-a   spore   colony lab, red   awake, working, editing a file
//	lab-b   spore   colony lab, red   asleep
//	lab-c   spore   colony lab        should run, dead
//	far-x   spore   colony far        awake, blocked
func (f *fixture) colony() {
	f.add(state.Spore{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch}}, true, lifecycle(0, "created", ""))
	f.add(state.Spore{Wish: state.Wish{ID: "lab-a", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "coder"}}, true,
		lifecycle(0, "created", ""),
		prompt(1, "user:alice", "Fix the flaky test.\nIt is in pass_test.go."),
		text(2, "Looking at it.\nFirst the test."),
		toolUse(3, "Edit", map[string]any{"file_path": "reconcile/pass_test.go", "old_string": "a", "new_string": "b"}),
		toolResult(4, false, "ok"))
	f.add(state.Spore{Wish: state.Wish{ID: "lab-b", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "tester"}}, false,
		lifecycle(0, "created", ""), lifecycle(5, "slept", "desired Running → Paused"))
	f.add(state.Spore{Wish: state.Wish{ID: "lab-c", Colony: "lab", Rank: state.RankSpore}}, true, lifecycle(0, "created", ""))
	f.rt.Kill("lab-c", "OOMKilled")
	f.add(state.Spore{Wish: state.Wish{ID: "far-x", Colony: "far", Rank: state.RankSpore}}, true,
		lifecycle(0, "created", ""), toolUse(7, "Bash", map[string]any{"command": "go test ./..."}))
	f.rt.BridgeOf("lab-a").SetState(bridge.StateWorking)
	f.rt.BridgeOf("far-x").SetState(bridge.StateBlocked)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("..", "..", "testdata", "ui", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./mycelia/ui -update to write it")
	require.Equal(t, string(want), got, "golden %s differs (go test ./mycelia/ui -update rewrites it)", name)
}

func requireSecure(t *testing.T, a answer) {
	t.Helper()
	csp := a.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "script-src 'nonce-")
	require.Contains(t, csp, "style-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.NotContains(t, csp, "http")
	require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", a.header.Get("X-Frame-Options"))
}

func TestFleetPage(t *testing.T) {
	f := newFixture(t)
	f.colony()
	a := f.get("/ui/")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, "text/html; charset=utf-8", a.header.Get("Content-Type"))
	requireSecure(t, a)
	require.Contains(t, a.body, "1 working</span> · <span class=\"b-idle\">1 idle</span> · <span class=\"b-blocked\">1 blocked</span> · <span class=\"b-dead\">1 dead</span> · <span class=\"b-asleep\">1 asleep</span>")
	// Grouped by colony, colonies by name.
	require.Less(t, strings.Index(a.body, "colony far"), strings.Index(a.body, "colony lab"))
	require.Contains(t, a.body, `<a href="/ui/spores/lab-a">lab-a</a>`)
	require.Contains(t, a.body, "Edit reconcile/pass_test.go")
	require.Contains(t, a.body, "Bash: go test ./...")
	// Nothing from elsewhere: no absolute URL at all.
	require.NotContains(t, a.body, "http://")
	require.NotContains(t, a.body, "https://")
	// Each spore's last events are read with a bounded Tail.
	for _, r := range f.st.take() {
		if strings.HasPrefix(r, "tail ") {
			require.Contains(t, r, fmt.Sprintf("n=%d", TailEvents))
		}
	}
	golden(t, "fleet.html", a.body)
}

func TestFleetEmpty(t *testing.T) {
	f := newFixture(t)
	a := f.get("/ui/")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, "0 working</span> · ")
	require.Contains(t, a.body, "No spores.")
	require.Equal(t, http.StatusMovedPermanently, f.noRedirect("/ui").status)
}

func (f *fixture) noRedirect(path string) answer {
	f.t.Helper()
	c := *f.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(f.ts.URL + path)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	return answer{status: resp.StatusCode, header: resp.Header}
}

func TestSporePage(t *testing.T) {
	f := newFixture(t)
	f.colony()
	a := f.get("/ui/spores/lab-a")
	require.Equal(t, http.StatusOK, a.status, a.body)
	requireSecure(t, a)
	require.Contains(t, a.body, `<span class="from">[user:alice]</span> <span class="text">Fix the flaky test.`+"\n"+`It is in pass_test.go.</span>`)
	require.Contains(t, a.body, `<script nonce="TESTNONCE">`)
	require.Contains(t, a.header.Get("Content-Security-Policy"), "script-src 'nonce-TESTNONCE'")
	require.Contains(t, a.body, `data-events="/ui/spores/lab-a/events?after=5"`)
	golden(t, "spore.html", a.body)
}

func TestSporePagination(t *testing.T) {
	f := newFixture(t)
	var evs []state.Event
	for i := 1; i <= 25; i++ {
		evs = append(evs, text(i, fmt.Sprintf("line %d", i)))
	}
	f.add(state.Spore{Wish: state.Wish{ID: "long", Colony: "lab", Rank: state.RankSpore}}, false, evs...)
	f.st.take()

	a := f.get("/ui/spores/long?limit=10")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, "events 16–25 of 25")
	require.Contains(t, a.body, `href="/ui/spores/long?before=16&amp;limit=10">older</a>`)
	require.NotContains(t, a.body, ">line 15<")
	require.Contains(t, a.body, "data-events=")
	require.Equal(t, []string{"events long after=15 limit=10"}, f.st.take())

	a = f.get("/ui/spores/long?before=16&limit=10")
	require.Contains(t, a.body, "events 6–15 of 25")
	require.Contains(t, a.body, `?before=6&amp;limit=10">older</a>`)
	require.Contains(t, a.body, `?before=26&amp;limit=10">newer</a>`)
	require.NotContains(t, a.body, "data-events=", "only the newest page follows the log")
	require.Equal(t, []string{"events long after=5 limit=10"}, f.st.take())

	a = f.get("/ui/spores/long?before=6&limit=10")
	require.Contains(t, a.body, "events 1–5 of 25")
	require.NotContains(t, a.body, ">older<")

	// A before past the end is the newest page; the default limit.
	a = f.get("/ui/spores/long?before=999999")
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.body, "events 1–25 of 25")

	for _, q := range []string{"before=abc", "before=0", "before=-1", "before=1.5", "before=", "limit=0", "limit=-5",
		"limit=1001", "limit=abc", "limit=99999999999999999999", "before=18446744073709551616", "before=1&before=2",
		"limit=1&limit=2", "page=2", "before=%00"} {
		f.st.take()
		a := f.get("/ui/spores/long?" + q)
		require.Equal(t, http.StatusBadRequest, a.status, q)
		requireSecure(t, a)
		require.Empty(t, f.st.take(), "%s: a bad request reads nothing", q)
	}
	require.Equal(t, http.StatusNotFound, f.get("/ui/spores/nobody").status)
	require.Equal(t, http.StatusNotFound, f.get("/ui/spores/NOT-AN-ID").status)
	require.Equal(t, http.StatusNotFound, f.get("/ui/spores/%3Cscript%3E").status)
	require.Equal(t, http.StatusNotFound, f.get("/ui/nothing").status)

	empty := newFixture(t)
	empty.add(state.Spore{Wish: state.Wish{ID: "fresh", Colony: "lab", Rank: state.RankSpore}}, false)
	a = empty.get("/ui/spores/fresh")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, "No events yet.")
}

// TestXSS puts script in every place a hostile agent, person or spore
// can write, and checks that the page shows it as text.
func TestXSS(t *testing.T) {
	f := newFixture(t)
	f.add(state.Spore{Wish: state.Wish{ID: "evil", Colony: "lab", Rank: state.RankSpore}}, true,
		lifecycle(0, "created"+xss, xss),
		prompt(1, "user:"+xss, "please "+xss),
		state.Event{Kind: state.KindMessage, At: at(1), From: "spore:" + xss, Text: xss},
		text(2, "here is "+xss+"\n<img src=x onerror=alert(2)>"),
		toolResult(3, true, xss),
		state.Event{Kind: state.KindAgent, At: at(3), Line: json.RawMessage(`"` + strings.ReplaceAll(xss, `/`, `\/`) + `"`)},
		state.Event{Kind: state.KindBreaker, At: at(3), Action: "opened", Text: xss},
		toolUse(4, "Bash", map[string]any{"command": "echo '" + xss + "'"}))
	for _, p := range []string{"/ui/", "/ui/spores/evil", "/ui/spores/evil?before=9&limit=8"} {
		a := f.get(p)
		require.Equal(t, http.StatusOK, a.status, a.body)
		requireSecure(t, a)
		require.NotContains(t, a.body, xss, p)
		require.NotContains(t, a.body, "<img", p)
		require.Contains(t, a.body, "&lt;script&gt;alert(1)&lt;/script&gt;", p)
		// The only script is the page's own, with its nonce.
		require.Equal(t, strings.Count(a.body, "<script"), strings.Count(a.body, `<script nonce="TESTNONCE">`), p)
	}

	// The live tail's JSON escapes markup too.
	lines := f.stream(t, "/ui/spores/evil/events?after=0", 8)
	for _, l := range lines {
		require.NotContains(t, l, "<", "%q", l)
	}

	// A hand-edited store's values never reach the page as markup either
	// (ids, colonies and reasons straight into the template).
	page := fleetPage{Nonce: "N", Title: xss, Strip: []stripItem{{Bucket: xss, N: 1}}, ObserveErr: xss, Orphans: []string{xss},
		Colonies: []colonyGroup{{Name: xss, Spores: []fleetRow{rowOf(reconcile.SporeHealth{ID: xss, Colony: xss, Rank: xss, Swarm: xss, Role: xss,
			Desired: xss, Effective: xss, Reason: xss, Code: xss})}}}}
	page.Colonies[0].Spores[0].Now = nowLine{Marker: xss, Text: xss, Ago: xss, At: xss}
	require.Empty(t, page.Colonies[0].Spores[0].Href, "an id that is not one gets no link")
	var b strings.Builder
	require.NoError(t, pages().ExecuteTemplate(&b, "fleet.html", page))
	require.NotContains(t, b.String(), xss)
	require.NotContains(t, b.String(), "<script")
}

// TestAccess: a session works from any address and host name (an
// Ingress, a port-forward); without one every page is refused, loopback
// and loopback host names included; only the stylesheets answer.
func TestAccess(t *testing.T) {
	f := newFixture(t)
	f.colony()
	addrs := []struct{ remote, host string }{
		{"127.0.0.1:5555", "127.0.0.1:7070"},
		{"127.0.0.1:5555", "localhost:7070"},
		{"[::1]:5555", "[::1]:7070"},
		{"192.0.2.1:5555", "127.0.0.1:7070"},
		{"10.0.0.3:5555", "serve.lab:7070"},
		{"garbage", "127.0.0.1:7070"},
		{"127.0.0.1:5555", "evil.example:7070"},
	}
	paths := []string{"/ui/", "/ui/spores/lab-a", "/ui/spores/lab-a/events?after=bad", "/ui/fleet/events?state=bad", "/ui/static/ui.css"}
	for _, tc := range []struct {
		name    string
		session bool
		// want is the status of a page, a stream and a stylesheet.
		page, stream int
	}{
		{"session", true, http.StatusOK, http.StatusBadRequest},
		{"no session", false, http.StatusSeeOther, http.StatusUnauthorized},
	} {
		for _, ad := range addrs {
			for _, p := range paths {
				req := httptest.NewRequest(http.MethodGet, p, nil)
				req.RemoteAddr, req.Host = ad.remote, ad.host
				if tc.session {
					req.AddCookie(f.session)
				}
				w := httptest.NewRecorder()
				f.h.ServeHTTP(w, req)
				want := tc.page
				switch {
				case strings.HasPrefix(p, "/ui/static/"):
					want = http.StatusOK
				case strings.Contains(p, "bad"):
					want = tc.stream
				}
				require.Equal(t, want, w.Code, "%s: %s from %s to %s: %s", tc.name, p, ad.remote, ad.host, w.Body)
				require.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
				require.NotEmpty(t, w.Header().Get("Content-Security-Policy"))
				if !tc.session {
					require.NotContains(t, w.Body.String(), "lab-a</")
				}
			}
		}
	}
	// The page only reads.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, f.request(m, "/ui/", strings.NewReader("x")))
		require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	}
}

func TestStatic(t *testing.T) {
	f := newFixture(t)
	a := f.get("/ui/static/ui.css")
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.header.Get("Content-Type"), "text/css")
	require.NotContains(t, a.body, "url(")
	require.NotContains(t, a.body, "@import")
	require.Equal(t, http.StatusNotFound, f.get("/ui/static/").status)
	require.Equal(t, http.StatusNotFound, f.get("/ui/static/nope.js").status)
}

// stream reads the SSE answer of path until it has n data lines (of any
// event), and returns every line it read.
func (f *fixture) stream(t *testing.T, path string, n int, hdr ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := f.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	require.NotEmpty(t, resp.Header.Get("Content-Security-Policy"))
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for data := 0; data < n && sc.Scan(); {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "data: ") {
			data++
		}
	}
	require.NoError(t, ctx.Err(), "stream of %s: got %q", path, lines)
	return lines
}

func dataOf(lines []string, event string) []string {
	var out []string
	for i, l := range lines {
		if l == "event: "+event && i+1 < len(lines) {
			out = append(out, strings.TrimPrefix(lines[i+1], "data: "))
		}
	}
	return out
}

func TestLiveTail(t *testing.T) {
	f := newFixture(t)
	f.colony()
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.append("lab-a", text(9, "new text"), toolUse(10, "Read", map[string]any{"file_path": "go.mod"}))
	}()
	lines := f.stream(t, "/ui/spores/lab-a/events?after=4", 3)
	require.Equal(t, "retry: 20", lines[0])
	got := dataOf(lines, "lines")
	require.Len(t, got, 3)
	var ls []liveLine
	require.NoError(t, json.Unmarshal([]byte(got[0]), &ls))
	require.Equal(t, uint64(5), ls[0].Seq)
	require.Equal(t, "tool_result", ls[0].Kind)
	require.NoError(t, json.Unmarshal([]byte(got[2]), &ls))
	require.Len(t, ls, 1)
	require.Equal(t, `<li class="l-tool-use" data-seq="7"><span class="seq">7</span> <span class="mk">→</span> <span class="text">Read go.mod</span></li>`, ls[0].HTML)
	ls[0].HTML = ""
	require.Equal(t, []liveLine{{Seq: 7, At: at(10).Format(time.RFC3339), Kind: "tool_use", Class: "l-tool-use", Marker: "→", Text: "Read go.mod"}}, ls)
	require.Contains(t, lines, "id: 7")

	// A reconnecting browser's Last-Event-ID wins over ?after=.
	lines = f.stream(t, "/ui/spores/lab-a/events?after=0", 1, "Last-Event-ID", "6")
	require.Equal(t, "id: 7", lines[2])

	for _, q := range []string{"after=x", "after=-1", "after=1&after=2", "before=3"} {
		a := f.get("/ui/spores/lab-a/events?"+q, "Accept", "text/event-stream")
		require.Equal(t, http.StatusBadRequest, a.status, q)
	}
	require.Equal(t, http.StatusBadRequest, f.get("/ui/spores/lab-a/events", "Last-Event-ID", "nope").status)
	require.Equal(t, http.StatusNotFound, f.get("/ui/spores/nobody/events").status)
}

func TestLiveTailBacklogAndGone(t *testing.T) {
	f := newFixture(t)
	evs := make([]state.Event, MaxBacklog+5)
	for i := range evs {
		evs[i] = text(1, "x")
	}
	f.add(state.Spore{Wish: state.Wish{ID: "long", Colony: "lab", Rank: state.RankSpore}}, false, evs...)
	f.st.take()
	lines := f.stream(t, "/ui/spores/long/events", 2)
	require.Equal(t, []string{"5"}, dataOf(lines, "skipped"))
	require.Contains(t, lines, "id: 6")
	for _, r := range f.st.take() {
		if strings.HasPrefix(r, "events") {
			require.Contains(t, r, fmt.Sprintf("limit=%d", PollBatch), "each poll is bounded")
		}
	}

	go func() {
		time.Sleep(50 * time.Millisecond)
		ctx := context.Background()
		_ = f.st.Store.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "long") })
	}()
	lines = f.stream(t, "/ui/spores/long/events?after=1005", 1)
	require.Equal(t, []string{"the spore was deleted"}, dataOf(lines, "gone"))
}

func TestLiveTailEndsOnShutdown(t *testing.T) {
	f := newFixture(t)
	f.add(state.Spore{Wish: state.Wish{ID: "quiet", Colony: "lab", Rank: state.RankSpore}}, false)
	ctx, cancel := context.WithCancel(context.Background())
	f.h.Shutdown = ctx
	req := f.request(http.MethodGet, "/ui/spores/quiet/events", nil)
	done := make(chan struct{})
	go func() {
		f.h.ServeHTTP(httptest.NewRecorder(), req)
		close(done)
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the live tail did not end on shutdown")
	}
	require.Zero(t, f.h.streams.Load())
}

func TestLiveTailLimit(t *testing.T) {
	f := newFixture(t)
	f.add(state.Spore{Wish: state.Wish{ID: "quiet", Colony: "lab", Rank: state.RankSpore}}, false)
	f.h.MaxStreams = 1
	f.h.streams.Store(1)
	a := f.get("/ui/spores/quiet/events", "Accept", "text/event-stream")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "10", a.header.Get("Retry-After"))
	require.Equal(t, int64(1), f.h.streams.Load())
}

func TestParsePage(t *testing.T) {
	for q, want := range map[string]pageParams{
		"":                   {limit: DefaultLimit},
		"before=7":           {before: 7, limit: DefaultLimit},
		"limit=1000":         {limit: 1000},
		"before=1&limit=1":   {before: 1, limit: 1},
		"limit=5&before=900": {before: 900, limit: 5},
	} {
		v, err := url.ParseQuery(q)
		require.NoError(t, err)
		got, err := parsePage(v)
		require.NoError(t, err, q)
		require.Equal(t, want, got, q)
	}
}

func TestDoingNow(t *testing.T) {
	now := at(60)
	require.Equal(t, nowLine{}, doingNow(nil, now))
	n := doingNow([]state.Event{toolUse(1, "Edit", map[string]any{"file_path": "a.go"}), toolResult(2, false, "ok")}, now)
	require.Equal(t, "Edit a.go", n.Text)
	require.Equal(t, "→", n.Marker)
	require.Equal(t, "59m ago", n.Ago)
	n = doingNow([]state.Event{lifecycle(1, "slept", "")}, now)
	require.Equal(t, "slept", n.Text)
	n = doingNow([]state.Event{text(1, "first\nsecond")}, now)
	require.Equal(t, "first…", n.Text)
	require.Equal(t, strings.Repeat("a", 119)+"…", firstLine(strings.Repeat("a", 500), 120))
}
