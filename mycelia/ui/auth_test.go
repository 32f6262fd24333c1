package ui

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// editedSettings is a store whose settings read as if hand-edited to
// hold ops as the operator tokens.
type editedSettings struct {
	state.Store
	ops []state.OperatorToken
}

func (s *editedSettings) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(editedTx{Tx: tx, ops: s.ops}) })
}

type editedTx struct {
	state.Tx
	ops []state.OperatorToken
}

func (t editedTx) Settings(ctx context.Context) (state.Settings, error) {
	st, err := t.Tx.Settings(ctx)
	if err != nil {
		return st, err
	}
	l := state.OperatorList(t.ops)
	st.Operators = &l
	return st, nil
}

// captureLog sends the handler's log, every level, to the returned buffer.
func (f *fixture) captureLog() *testutil.Buffer {
	var b testutil.Buffer
	f.h.Logger = slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &b
}

// setOperators replaces the store's operator tokens.
func (f *fixture) setOperators(ops ...state.OperatorToken) {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		return tx.PutSettings(ctx, s.WithOperators(ops))
	}))
}

// operator makes a token for name, stores its hash next to the others'
// and returns the token.
func (f *fixture) operator(name string) string {
	f.t.Helper()
	tok, hash, err := state.NewOperatorToken()
	require.NoError(f.t, err)
	s := statetest.Read(f.t, f.st.Store, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	f.setOperators(append(s.OperatorTokens(), state.OperatorToken{Name: name, Hash: hash,
		Session: state.SessionHash(state.OperatorSessionKey(tok)), Created: t0})...)
	return tok
}

// user is one browser: a cookie jar, redirects not followed.
type user struct {
	t *testing.T
	f *fixture
	c *http.Client
	// seen collects every answer's headers and body, to look for secrets.
	seen strings.Builder
}

func (f *fixture) user() *user {
	jar, err := cookiejar.New(nil)
	require.NoError(f.t, err)
	c := *f.ts.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &user{t: f.t, f: f, c: &c}
}

func (u *user) do(method, path string, form url.Values, hdr ...string) answer {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.f.ts.URL+path, body)
	require.NoError(u.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", u.f.ts.URL)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := u.c.Do(req)
	require.NoError(u.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(u.t, err)
	for k, v := range resp.Header {
		u.seen.WriteString(k + ": " + strings.Join(v, ", ") + "\n")
	}
	u.seen.Write(b)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (u *user) get(path string, hdr ...string) answer {
	u.t.Helper()
	return u.do(http.MethodGet, path, nil, hdr...)
}

func (u *user) post(path string, form url.Values, hdr ...string) answer {
	u.t.Helper()
	return u.do(http.MethodPost, path, form, hdr...)
}

// login logs in with token and requires it to work.
func (u *user) login(token string) *http.Cookie {
	u.t.Helper()
	a := u.post("/ui/login", url.Values{"token": {token}, "next": {"/ui/"}})
	require.Equal(u.t, http.StatusSeeOther, a.status, a.body)
	require.Equal(u.t, "/ui/", a.header.Get("Location"))
	return u.cookie()
}

func (u *user) cookie() *http.Cookie {
	base, _ := url.Parse(u.f.ts.URL + "/ui/")
	for _, c := range u.c.Jar.Cookies(base) {
		if c.Name == SessionCookie {
			return c
		}
	}
	return nil
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a page's form.
func csrfOn(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(t, m, "no csrf field on the page")
	return m[1]
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	f.colony()
	logs := f.captureLog()
	token := f.operator("alice")
	u := f.user()

	// Without a session: pages redirect to the login page (loopback too),
	// the live tail and forms answer 401, the login page and styles work.
	a := u.get("/ui/spores/lab-a?limit=5")
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Equal(t, "/ui/login?next=%2Fui%2Fspores%2Flab-a%3Flimit%3D5", a.header.Get("Location"))
	require.NotContains(t, a.body, "lab-a</h1>")
	a = u.get("/ui/spores/lab-a/events", "Accept", "text/event-stream")
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.NotContains(t, a.body, "data:")
	require.Equal(t, http.StatusUnauthorized, u.post("/ui/spores/lab-a/prompt", url.Values{"text": {"hi"}}).status)
	require.Equal(t, http.StatusOK, u.get("/ui/static/forms.css").status)
	a = u.get("/ui/login?next=%2Fui%2Fspores%2Flab-a")
	require.Equal(t, http.StatusOK, a.status)
	requireSecure(t, a)
	require.Contains(t, a.body, `<form class="login" method="post" action="/ui/login">`)
	require.Contains(t, a.body, `<input type="hidden" name="next" value="/ui/spores/lab-a">`)
	require.Contains(t, a.body, `type="password"`)

	// A wrong token: 401, no cookie.
	for _, bad := range []string{"", "spo_nope", token + "x", strings.ToUpper(token), string(state.HashToken(token))} {
		a = u.post("/ui/login", url.Values{"token": {bad}})
		require.Equal(t, http.StatusUnauthorized, a.status, bad)
		require.Contains(t, a.body, "not a valid operator token")
		require.Empty(t, a.header.Values("Set-Cookie"))
	}
	require.Nil(t, u.cookie())
	require.Contains(t, logs.String(), "ui: failed login")

	// The right one: a session cookie with every attribute, then the fleet.
	a = u.post("/ui/login", url.Values{"token": {" " + token + "\n"}, "next": {"/ui/spores/lab-a"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	require.Equal(t, "/ui/spores/lab-a", a.header.Get("Location"))
	set := a.header.Get("Set-Cookie")
	require.Contains(t, set, SessionCookie+"=v2.alice.")
	require.Contains(t, set, "; Path=/ui/")
	require.Contains(t, set, "; Max-Age=43200")
	require.Contains(t, set, "; HttpOnly")
	require.Contains(t, set, "; SameSite=Strict")
	require.NotContains(t, set, "Secure", "plain HTTP")
	cookie := u.cookie()
	require.NotNil(t, cookie)
	a = u.get("/ui/")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `<a href="/ui/spores/lab-a">lab-a</a>`)
	require.Contains(t, a.body, `<header class="top"><a class="home" href="/ui/">sporectl</a> <form class="logout" method="post" action="/ui/logout"><span class="as">alice</span>`)
	require.Equal(t, 1, strings.Count(a.body, `<form class="logout"`))
	require.Equal(t, http.StatusOK, u.get("/ui/spores/lab-a").status)
	a = u.get("/ui/logout")
	require.Contains(t, a.body, `Logged in as <span class="as">alice</span>`)

	// A session works from any address and host name (an Ingress).
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "192.0.2.7:4444", "colony.example"
	req.AddCookie(cookie)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code)
	req = httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "192.0.2.7:4444", "colony.example"
	w = httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusSeeOther, w.Code, "not without one")

	// Nothing anywhere holds the token or the cookie's value.
	for _, secret := range []string{token, cookie.Value, string(state.HashToken(token))} {
		require.NotContains(t, logs.String(), secret)
		require.NotContains(t, strings.ReplaceAll(u.seen.String(), SessionCookie+"="+cookie.Value, ""), secret, "only in its own Set-Cookie")
	}
	require.Contains(t, logs.String(), "operator=alice")
}

func TestLoginSecureCookie(t *testing.T) {
	f := newFixture(t)
	token := f.operator("alice")
	for _, overTLS := range []bool{true, false} {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Host = "colony.example"
		req.RemoteAddr = "192.0.2.7:4444"
		if overTLS {
			req.Header.Set("Origin", "https://colony.example")
			req.TLS = &tls.ConnectionState{}
		} else {
			// Behind an Ingress that terminates TLS.
			req.Header.Set("Origin", "https://colony.example")
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
		require.Contains(t, w.Header().Get("Set-Cookie"), "; Secure")
	}
}

func TestLoginRefusals(t *testing.T) {
	f := newFixture(t)
	f.colony()
	token := f.operator("alice")
	u := f.user()

	// A form from another site, or with no origin at all.
	for _, hdr := range [][]string{{"Origin", "http://evil.example"}, {"Origin", "null"}, {"Origin", "", "Referer", "http://evil.example/x"}, {"Origin", ""}} {
		a := u.post("/ui/login", url.Values{"token": {token}}, hdr...)
		require.Equal(t, http.StatusForbidden, a.status, "%v", hdr)
		require.Nil(t, u.cookie(), "%v", hdr)
	}
	// Referer alone, same site, is enough.
	a := u.post("/ui/login", url.Values{"token": {token}}, "Origin", "", "Referer", f.ts.URL+"/ui/login")
	require.Equal(t, http.StatusSeeOther, a.status)

	// A login goes only to a page of its own.
	for next, want := range map[string]string{
		"/ui/spores/lab-a?limit=5": "/ui/spores/lab-a?limit=5",
		"//evil.example/ui/":       "/ui/",
		"https://evil.example/ui/": "/ui/",
		"/ui/\\evil":               "/ui/",
		"/api/spores":              "/ui/",
		"":                         "/ui/",
	} {
		a := f.user().post("/ui/login", url.Values{"token": {token}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, a.status)
		require.Equal(t, want, a.header.Get("Location"), next)
	}
	// Too big a body.
	a = f.user().post("/ui/login", url.Values{"token": {strings.Repeat("x", maxLoginBody)}})
	require.Equal(t, http.StatusBadRequest, a.status)
	// A token in the URL is not read.
	a = f.user().post("/ui/login?token="+url.QueryEscape(token), url.Values{})
	require.Equal(t, http.StatusUnauthorized, a.status)
}

func TestSessionEnds(t *testing.T) {
	f := newFixture(t)
	f.colony()
	token := f.operator("alice")
	f.operator("bob")
	u := f.user()
	cookie := u.login(token)
	require.Equal(t, http.StatusOK, u.get("/ui/").status)

	// Expired: twelve hours later.
	now := t0.Add(time.Hour)
	f.h.Now = func() time.Time { return now.Add(SessionLifetime) }
	require.Equal(t, http.StatusSeeOther, u.get("/ui/").status)
	f.h.Now = func() time.Time { return now.Add(SessionLifetime - time.Second) }
	require.Equal(t, http.StatusOK, u.get("/ui/").status)
	f.h.Now = func() time.Time { return now }

	// Tampered: another expiry, another name, another MAC, garbage.
	parts := strings.Split(cookie.Value, ".")
	require.Len(t, parts, 4)
	later := now.Add(100 * time.Hour).Unix()
	for _, v := range []string{
		strings.Join([]string{parts[0], parts[1], "9999999999", parts[3]}, "."),
		strings.Join([]string{parts[0], "bob", parts[2], parts[3]}, "."),
		strings.Join([]string{parts[0], parts[1], parts[2], "AAAA"}, "."),
		strings.Join([]string{"v1", parts[1], parts[2], parts[3]}, "."),
		cookie.Value + ".x", "", "v2...",
		// The right key, but valid for longer than a session may be.
		newSession("alice", state.OperatorSessionKey(token), time.Unix(later, 0)),
		// Made from what the store keeps: the token's hash or the session
		// key's hash, as keys.
		newSession("alice", unhex(t, string(state.HashToken(token))), now.Add(time.Hour)),
		newSession("alice", unhex(t, string(state.SessionHash(state.OperatorSessionKey(token)))), now.Add(time.Hour)),
		newSession("alice", []byte(state.HashToken(token)), now.Add(time.Hour)),
	} {
		req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: v})
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		require.Equal(t, http.StatusSeeOther, w.Code, v)
	}

	// Revoked: alice's token goes, bob's stays (the page still asks for
	// logins); her session ends at once, on every replica alike.
	other := &Handler{Store: f.st, Pass: f.h.Pass, Now: f.h.Now}
	serve := func(h *Handler) int {
		req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
		req.AddCookie(cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	require.Equal(t, http.StatusOK, serve(other), "a second replica takes the session")
	s := statetest.Read(t, f.st.Store, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	var kept []state.OperatorToken
	for _, op := range s.OperatorTokens() {
		if op.Name != "alice" {
			kept = append(kept, op)
		}
	}
	require.Len(t, kept, len(s.OperatorTokens())-1)
	f.setOperators(kept...)
	require.Equal(t, http.StatusSeeOther, serve(f.h))
	require.Equal(t, http.StatusSeeOther, serve(other))
	require.Equal(t, http.StatusUnauthorized, u.post("/ui/login", url.Values{"token": {token}}).status)

	// A new token of the same name does not bring the old session back.
	f.operator("alice")
	require.Equal(t, http.StatusSeeOther, serve(f.h))
}

func TestLogout(t *testing.T) {
	f := newFixture(t)
	token := f.operator("alice")
	u := f.user()
	u.login(token)
	page := u.get("/ui/logout")
	require.Equal(t, http.StatusOK, page.status)
	csrf := csrfOn(t, page.body)

	a := u.post("/ui/logout", url.Values{})
	require.Equal(t, http.StatusForbidden, a.status, "no CSRF token")
	require.NotNil(t, u.cookie())
	a = u.post("/ui/logout", url.Values{"csrf": {csrf}}, "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, a.status)
	require.NotNil(t, u.cookie())

	a = u.post("/ui/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	require.Equal(t, "/ui/login", a.header.Get("Location"))
	require.Contains(t, a.header.Get("Set-Cookie"), "Max-Age=0")
	require.Nil(t, u.cookie())
	require.Equal(t, http.StatusSeeOther, u.get("/ui/").status)
}

// TestNoOperators: while the store has no operator token nobody can log
// in, so every page, stream and form answers 403 saying how to make one,
// to loopback clients as to any other; only the stylesheets answer.
func TestNoOperators(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.setOperators()
	for _, u := range []*user{f.user(), {t: t, f: f, c: f.ts.Client()}} { // a new browser, and one with an old session
		for _, p := range []string{"/ui/", "/ui/spores/lab-a", "/ui/login", "/ui/logout", "/ui/nope"} {
			a := u.get(p)
			require.Equal(t, http.StatusForbidden, a.status, p)
			require.Contains(t, a.body, "no operator exists: run `sporectl token create --operator NAME`", p)
			require.NotContains(t, a.body, "lab-a</", p)
			require.NotContains(t, a.body, "<form", p)
		}
		a := u.get("/ui/spores/lab-a/events", "Accept", "text/event-stream")
		require.Equal(t, http.StatusForbidden, a.status)
		require.Equal(t, NoOperatorText+"\n", a.body)
		require.Equal(t, http.StatusForbidden, u.post("/ui/login", url.Values{"token": {fixtureToken}}).status)
		require.Equal(t, http.StatusForbidden, u.post("/ui/spores/lab-a/prompt", url.Values{"text": {"hi"}}).status)
		require.Equal(t, http.StatusOK, u.get("/ui/static/ui.css").status)
	}
	require.Nil(t, f.user().cookie())
	req := httptest.NewRequest(http.MethodGet, "/ui/login", nil)
	req.RemoteAddr, req.Host = "192.0.2.7:4444", "colony.example"
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Contains(t, w.Body.String(), "sporectl token create --operator NAME")
}

// TestAccessStoreDown: when the operator tokens cannot be read, nobody is
// let in.
func TestAccessStoreDown(t *testing.T) {
	f := newFixture(t)
	logs := f.captureLog()
	h := &Handler{Store: failingStore{f.st}, Logger: f.h.Logger}
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.NotContains(t, w.Body.String(), "disk on fire")
	require.Contains(t, logs.String(), "disk on fire")
}

type failingStore struct{ state.Store }

func (failingStore) View(context.Context, func(state.Tx) error) error {
	return &state.UnavailableError{Op: "read settings", Err: errors.New("disk on fire")}
}

// BenchmarkAccess is the access rule's cost per request, on the cheapest
// route (a stylesheet): no session and no operator token (the baseline),
// a session checked against 1 and against MaxOperators tokens, and a
// login compared with MaxOperators hashes.
func BenchmarkAccess(b *testing.B) {
	for _, tc := range []struct {
		name string
		ops  int
	}{{"no-session", 0}, {"session-1op", 1}, {"session-256ops", state.MaxOperators}} {
		b.Run(tc.name, func(b *testing.B) {
			settings := state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}
			var cookie *http.Cookie
			if tc.ops > 0 {
				ops := make([]state.OperatorToken, tc.ops)
				var key []byte
				for i := range ops {
					tok, hash, _ := state.NewOperatorToken()
					key = state.OperatorSessionKey(tok)
					ops[i] = state.OperatorToken{Name: fmt.Sprintf("op%d", i), Hash: hash, Session: state.SessionHash(key), Created: t0}
				}
				settings = settings.WithOperators(ops)
				cookie = &http.Cookie{Name: SessionCookie, Value: newSession(ops[len(ops)-1].Name, key, t0.Add(2*time.Hour))}
			}
			h := &Handler{Store: statetest.Dir(b, settings), Now: func() time.Time { return t0.Add(time.Hour) }}
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/ui/static/forms.css", nil)
				req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
				if cookie != nil {
					req.AddCookie(cookie)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
	b.Run("login-256ops", func(b *testing.B) {
		ops := make([]state.OperatorToken, state.MaxOperators)
		for i := range ops {
			_, hash, _ := state.NewOperatorToken()
			ops[i] = state.OperatorToken{Name: "op", Hash: hash, Created: t0}
		}
		for b.Loop() {
			if _, ok := state.MatchOperator(ops, "spo_not_a_token"); ok {
				b.Fatal("matched")
			}
		}
	})
}

// TestHandEditedOperators: an entry whose hash is not one (a hand-edited
// store) never matches, not even an empty token, and still counts as a
// configured token: the page asks for logins rather than opening up.
func TestHandEditedOperators(t *testing.T) {
	f := newFixture(t)
	// Both stores refuse to write such entries, so the hand edit is made
	// on what the page reads.
	f.h.Store = &editedSettings{Store: f.h.Store, ops: []state.OperatorToken{
		{Name: "ghost", Hash: "", Created: t0},
		{Name: "upper", Hash: state.TokenHash(strings.ToUpper(string(state.HashToken("spo_x")))), Created: t0},
	}}
	u := f.user()
	require.Equal(t, http.StatusSeeOther, u.get("/ui/").status)
	for _, tok := range []string{"", "spo_x"} {
		require.Equal(t, http.StatusUnauthorized, u.post("/ui/login", url.Values{"token": {tok}}).status, tok)
	}
	forged := newSession("ghost", make([]byte, 32), t0.Add(2*time.Hour))
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: forged})
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	require.Equal(t, http.StatusSeeOther, w.Code, "a session for an entry with no session hash is refused")
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// TestStreamEndsWhenRevoked: an open live tail and an open fleet stream
// end (within ui's recheck, a second) once their session's token is
// revoked, though access is otherwise checked when a request starts.
func TestStreamEndsWhenRevoked(t *testing.T) {
	f := newFixture(t)
	f.colony()
	token := f.operator("alice")
	f.operator("bob")
	cookie := f.user().login(token)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := func(path string) *bufio.Scanner {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+path, nil)
		require.NoError(t, err)
		req.AddCookie(cookie)
		resp, err := f.ts.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return bufio.NewScanner(resp.Body)
	}
	tail := open("/ui/spores/lab-a/events?after=5")
	fleet := open("/ui/fleet/events")
	require.True(t, tail.Scan())
	require.True(t, fleet.Scan())

	// Only bob's token is left.
	var s state.Settings
	require.NoError(t, f.st.Store.View(ctx, func(tx state.Tx) (err error) { s, err = tx.Settings(ctx); return }))
	var keep []state.OperatorToken
	for _, op := range s.OperatorTokens() {
		if op.Name == "bob" {
			keep = append(keep, op)
		}
	}
	f.setOperators(keep...)
	f.append("lab-a", text(30, "after the revoke"))
	for _, sc := range []*bufio.Scanner{tail, fleet} {
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		require.Contains(t, lines, "event: ended", "the stream ended by saying so: %q", lines)
	}
}
