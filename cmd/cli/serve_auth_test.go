package cli

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile/metrics"
)

// TestServeSurfacesAgree: serve's three surfaces ask one authenticator
// (mycelia/auth), so they agree on who a request is. Each opens for its
// own kind of credential alone: a spore's id and token open the API, an
// operator's token as a bearer token opens /metrics, an operator's
// session opens the page. No kind opens another surface, and a bad
// credential is refused by all three, each in its own form (the API's
// JSON 401, /metrics' plain 401, the page's redirect to its login).
func TestServeSurfacesAgree(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "m", "--colony", "lab", "--rank", "colony", "--wake")
	op := strings.TrimSpace(c.ok("token", "create", "--operator", "alice"))
	ts, sporeTok := c.serve(t, "m")
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	// An operator's session, from the page's login with its token.
	login := func(token string) *http.Cookie {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ts.URL)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		for _, ck := range resp.Cookies() {
			if ck.Name == ui.SessionCookie && ck.Value != "" {
				return ck
			}
		}
		return nil
	}
	session := login(op)
	require.NotNil(t, session, "the operator's token logs in")
	// Neither a spore's token nor a session's value logs in.
	require.Nil(t, login(sporeTok), "a spore's token is not an operator's")
	require.Nil(t, login(session.Value), "a session is not a token")

	type surface string
	const api, page, scrape surface = "api", "page", "metrics"
	paths := map[surface]string{api: "/api/spores", page: "/ui/", scrape: metrics.Path}
	// open asks each surface with cred and reports which let it in, after
	// checking each refusal is that surface's own.
	open := func(t *testing.T, cred func(*http.Request)) []surface {
		var in []surface
		for _, s := range []surface{api, page, scrape} {
			req, err := http.NewRequest(http.MethodGet, ts.URL+paths[s], nil)
			require.NoError(t, err)
			cred(req)
			resp, err := client.Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			if resp.StatusCode == http.StatusOK {
				in = append(in, s)
				continue
			}
			switch s {
			case api:
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", b)
				require.Equal(t, `Bearer realm="sporectl"`, resp.Header.Get("WWW-Authenticate"))
				require.JSONEq(t, `{"error":"unauthorized: send Authorization: Bearer <token> and X-Sporectl-Spore: <spore id>","code":"unauthorized"}`, string(b))
			case scrape:
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", b)
				require.Equal(t, `Bearer realm="sporectl metrics"`, resp.Header.Get("WWW-Authenticate"))
				require.Equal(t, metrics.Unauthorized+"\n", string(b))
			case page:
				require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s", b)
				require.True(t, strings.HasPrefix(resp.Header.Get("Location"), ui.Prefix+"login?"), resp.Header.Get("Location"))
			}
			for _, secret := range []string{op, sporeTok, session.Value} {
				require.NotContains(t, string(b), secret, "%s: no credential in an answer", s)
			}
		}
		return in
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	asSpore := func(id, tok string) func(*http.Request) {
		return func(r *http.Request) {
			bearer(tok)(r)
			r.Header.Set(mycelia.HeaderSpore, id)
		}
	}
	cookie := func(name, value string) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: name, Value: value}) }
	}
	for _, tc := range []struct {
		name string
		cred func(*http.Request)
		open []surface
	}{
		{"nothing", func(*http.Request) {}, nil},
		{"a wrong token", bearer("spt_wrong"), nil},
		{"a wrong token with a spore's id", asSpore("m", "spt_wrong"), nil},
		{"a wrong session", cookie(ui.SessionCookie, "v2.alice.1.AAAA"), nil},
		{"a spore's id and token", asSpore("m", sporeTok), []surface{api}},
		{"a spore's token alone", bearer(sporeTok), nil},
		{"a spore's token as a session", cookie(ui.SessionCookie, sporeTok), nil},
		{"an operator's token", bearer(op), []surface{scrape}},
		{"an operator's token with a spore's id", asSpore("m", op), []surface{scrape}},
		{"an operator's token as a session", cookie(ui.SessionCookie, op), nil},
		{"an operator's session", func(r *http.Request) { r.AddCookie(session) }, []surface{page}},
		{"an operator's session as a bearer token", bearer(session.Value), nil},
		{"an operator's session as a spore's", asSpore("m", session.Value), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.open, open(t, tc.cred))
		})
	}
}
