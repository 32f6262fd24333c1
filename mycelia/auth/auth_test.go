package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// world is a store with one spore ("a", awake, with a token), one
// operator ("alice", with a token) and the clock sessions are judged by.
type world struct {
	authn    auth.Authenticator
	sporeTok string
	opTok    string
	session  auth.Session
	now      time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	opTok, opHash, err := state.NewOperatorToken()
	require.NoError(t, err)
	settings := state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}.WithOperators([]state.OperatorToken{{
		Name: "alice", Hash: opHash, Session: state.SessionHash(state.OperatorSessionKey(opTok)), Created: now}})
	st := statetest.Dir(t, settings)
	sporeTok, hash, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		sp := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Desired: state.Running}}
		sp.Created, sp.Updated = now, now
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "a", hash)
	}))
	w := &world{authn: auth.Authenticator{Store: st, Now: func() time.Time { return now }}, sporeTok: sporeTok, opTok: opTok, now: now}
	w.session, err = w.authn.Login(ctx, opTok)
	require.NoError(t, err)
	return w
}

// TestWho: each kind of credential is judged by its own rule, and only
// the kind asked for is looked at.
func TestWho(t *testing.T) {
	w := newWorld(t)
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	spore := func(id, tok string) func(*http.Request) {
		return func(r *http.Request) { bearer(tok)(r); r.Header.Set(auth.HeaderSpore, id) }
	}
	cookie := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: v}) }
	}
	// who is a caller as the test compares it: its kind and its name.
	type who struct {
		Kind auth.Credential
		Name string
	}
	for _, tc := range []struct {
		name string
		kind auth.Credential
		req  func(*http.Request)
		want who // zero: ErrUnauthorized
	}{
		{"a spore", auth.SporeToken, spore("a", w.sporeTok), who{auth.SporeToken, "a"}},
		{"a spore, scheme in another case", auth.SporeToken, func(r *http.Request) {
			r.Header.Set("Authorization", "bEARER "+w.sporeTok)
			r.Header.Set(auth.HeaderSpore, "a")
		}, who{auth.SporeToken, "a"}},
		{"a spore without its id", auth.SporeToken, bearer(w.sporeTok), who{}},
		{"a spore with another's id", auth.SporeToken, spore("b", w.sporeTok), who{}},
		{"a spore with an id that is none", auth.SporeToken, spore("../a", w.sporeTok), who{}},
		{"a spore's token with a space before it", auth.SporeToken, spore("a", " "+w.sporeTok), who{}},
		{"a spore with two ids", auth.SporeToken, func(r *http.Request) {
			spore("a", w.sporeTok)(r)
			r.Header.Add(auth.HeaderSpore, "a")
		}, who{}},
		{"a spore with two tokens", auth.SporeToken, func(r *http.Request) {
			spore("a", w.sporeTok)(r)
			r.Header.Add("Authorization", "Bearer "+w.sporeTok)
		}, who{}},
		{"a spore's token in another scheme", auth.SporeToken, func(r *http.Request) {
			r.Header.Set("Authorization", "Basic "+w.sporeTok)
			r.Header.Set(auth.HeaderSpore, "a")
		}, who{}},
		{"an operator's token as a spore's", auth.SporeToken, spore("a", w.opTok), who{}},
		{"a session as a spore's", auth.SporeToken, cookie(w.session.Value), who{}},

		{"an operator", auth.OperatorToken, bearer(w.opTok), who{auth.OperatorToken, "alice"}},
		{"an operator, spaces around the token", auth.OperatorToken, bearer("  " + w.opTok + " "), who{auth.OperatorToken, "alice"}},
		{"no token", auth.OperatorToken, func(*http.Request) {}, who{}},
		{"a wrong operator token", auth.OperatorToken, bearer("spo_wrong"), who{}},
		{"a spore's token as an operator's", auth.OperatorToken, spore("a", w.sporeTok), who{}},
		{"a session as a bearer token", auth.OperatorToken, bearer(w.session.Value), who{}},
		{"a session as an operator's", auth.OperatorToken, cookie(w.session.Value), who{}},

		{"a session", auth.OperatorSession, cookie(w.session.Value), who{auth.OperatorSession, "alice"}},
		{"a session under another name", auth.OperatorSession, cookie(auth.SessionValue("bob", w.session.Key, w.session.Expires)), who{}},
		{"a session past its expiry", auth.OperatorSession, cookie(auth.SessionValue("alice", w.session.Key, w.now)), who{}},
		{"a session too far ahead", auth.OperatorSession, cookie(auth.SessionValue("alice", w.session.Key, w.now.Add(auth.SessionLifetime+time.Hour))), who{}},
		{"a session with another key", auth.OperatorSession, cookie(auth.SessionValue("alice", make([]byte, 32), w.session.Expires)), who{}},
		{"an operator's token as a session", auth.OperatorSession, cookie(w.opTok), who{}},
		{"an operator's token as a bearer, for a session", auth.OperatorSession, bearer(w.opTok), who{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			tc.req(r)
			c, err := w.authn.Who(context.Background(), r, auth.Want{Kind: tc.kind})
			if tc.want == (who{}) {
				require.ErrorIs(t, err, auth.ErrUnauthorized)
				require.NotErrorIs(t, err, auth.ErrNoOperator)
				return
			}
			require.NoError(t, err)
			got := who{c.Kind, c.Operator}
			if c.Kind == auth.SporeToken {
				got.Name = c.Spore.ID
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("who (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWhoAlso: a spore's call about another reads it in the same View,
// keeping its ErrNotFound for the surface to answer.
func TestWhoAlso(t *testing.T) {
	w := newWorld(t)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+w.sporeTok)
	r.Header.Set(auth.HeaderSpore, "a")
	c, err := w.authn.Who(context.Background(), r, auth.Want{Kind: auth.SporeToken, Also: "a"})
	require.NoError(t, err)
	require.Equal(t, "a", c.Also.ID)
	require.Equal(t, "a", c.Also.Spore.ID)
	require.NoError(t, c.Also.Err)
	c, err = w.authn.Who(context.Background(), r, auth.Want{Kind: auth.SporeToken, Also: "ghost"})
	require.NoError(t, err)
	require.Equal(t, "ghost", c.Also.ID)
	require.ErrorIs(t, c.Also.Err, state.ErrNotFound)
}

// TestWhoNoOperator: while the store holds no operator token, an
// operator's credential is ErrNoOperator (the page says how to make one);
// a spore's is judged as ever.
func TestWhoNoOperator(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	authn := auth.Authenticator{Store: st}
	for _, kind := range []auth.Credential{auth.OperatorToken, auth.OperatorSession} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer spo_any")
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: "v2.alice.1.AAAA"})
		_, err := authn.Who(context.Background(), r, auth.Want{Kind: kind})
		require.ErrorIs(t, err, auth.ErrNoOperator, "kind %d", kind)
		require.ErrorIs(t, err, auth.ErrUnauthorized, "kind %d", kind)
	}
	_, err := authn.Login(context.Background(), "spo_any")
	require.ErrorIs(t, err, auth.ErrUnauthorized)
}

// TestWhoStoreDown: without the store nobody is let in, and the error is
// the store's, not a refusal (the surfaces answer 503).
func TestWhoStoreDown(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+w.opTok)
	r.Header.Set(auth.HeaderSpore, "a")
	r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: w.session.Value})
	for _, kind := range []auth.Credential{auth.SporeToken, auth.OperatorToken, auth.OperatorSession} {
		_, err := w.authn.Who(ctx, r, auth.Want{Kind: kind})
		require.Error(t, err, "kind %d", kind)
		require.False(t, errors.Is(err, auth.ErrUnauthorized), "kind %d: %v", kind, err)
		require.NotContains(t, err.Error(), w.opTok)
	}
}
