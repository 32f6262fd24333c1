package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia/auth"
)

// TestWhoModelKey: the model gateway's key is a spore's id and token in
// the places Claude Code sends a key; anything else, and a spore's or an
// operator's credential of another shape, is refused.
func TestWhoModelKey(t *testing.T) {
	w := newWorld(t)
	key := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(auth.HeaderModelKey, v) }
	}
	bearer := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+v) }
	}
	both := func(fs ...func(*http.Request)) func(*http.Request) {
		return func(r *http.Request) {
			for _, f := range fs {
				f(r)
			}
		}
	}
	header := func(id string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Add(auth.HeaderSpore, id) }
	}
	for _, tc := range []struct {
		name string
		req  func(*http.Request)
		ok   bool
	}{
		{"id:token as x-api-key", key("a:" + w.sporeTok), true},
		{"id:token as a bearer", bearer("a:" + w.sporeTok), true},
		{"a token with the spore header", both(key(w.sporeTok), header("a")), true},
		{"a bearer token with the spore header", both(bearer(w.sporeTok), header("a")), true},

		{"nothing", func(*http.Request) {}, false},
		{"a token alone", key(w.sporeTok), false},
		{"another spore's id", key("b:" + w.sporeTok), false},
		{"an id that is none", key("../a:" + w.sporeTok), false},
		{"a wrong token", key("a:spt_wrong"), false},
		{"an empty token", key("a:"), false},
		{"an operator's token", key("a:" + w.opTok), false},
		{"id:token and the header too", both(key("a:"+w.sporeTok), header("a")), false},
		{"two spore headers", both(key(w.sporeTok), header("a"), header("a")), false},
		{"x-api-key and a bearer", both(key("a:"+w.sporeTok), bearer("a:"+w.sporeTok)), false},
		{"two keys", both(key("a:"+w.sporeTok), func(r *http.Request) { r.Header.Add(auth.HeaderModelKey, "a:"+w.sporeTok) }), false},
		{"a key in another scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic a:"+w.sporeTok) }, false},
		{"a session cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: w.session.Value}) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/model/v1/messages", nil)
			tc.req(r)
			c, err := w.authn.Who(context.Background(), r, auth.Want{Kind: auth.SporeModelKey})
			if !tc.ok {
				require.ErrorIs(t, err, auth.ErrUnauthorized)
				return
			}
			require.NoError(t, err)
			require.Equal(t, auth.SporeModelKey, c.Kind)
			require.Equal(t, "a", c.Spore.ID)
		})
	}
}

// TestWhoModelKeyNotElsewhere: the model key's shape opens no other
// surface — the pod API does not take "ID:TOKEN" in x-api-key.
func TestWhoModelKeyNotElsewhere(t *testing.T) {
	w := newWorld(t)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(auth.HeaderModelKey, "a:"+w.sporeTok)
	for _, kind := range []auth.Credential{auth.SporeToken, auth.OperatorToken, auth.OperatorSession} {
		_, err := w.authn.Who(context.Background(), r, auth.Want{Kind: kind})
		require.ErrorIs(t, err, auth.ErrUnauthorized, "kind %d", kind)
	}
}
