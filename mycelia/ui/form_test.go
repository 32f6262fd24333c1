package ui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestRepeatedFormFields: a form field sent twice was half read (the first
// value won: text=a&text=b sent "a", wake=1&wake= woke a sleeping spore,
// a good csrf first let a second one through). The page's POSTs refuse
// it with 400 and write nothing: no transaction, the log, outbox and
// record as they were, nothing at the bridge, no session made or ended.
func TestRepeatedFormFields(t *testing.T) {
	f := newFixture(t)
	f.colony()
	u, csrf := loggedIn(t, f)
	other := f.user()
	other.login(f.operator("bob"))
	otherCSRF := csrfOn(t, other.get("/ui/spores/lab-a").body)
	tok := f.operator("carol")
	updates := &statetest.Counting{Store: f.st.Store}
	f.st.Store = updates

	for _, tc := range []struct {
		name, spore string
		form        url.Values
		msg         string
	}{
		{"text twice", "lab-a", url.Values{"csrf": {csrf}, "text": {"a", "b"}}, `the field "text" is sent more than once`},
		{"wake twice, set first", "lab-b", url.Values{"csrf": {csrf}, "text": {"wake up"}, "wake": {"1", ""}}, `the field "wake" is sent more than once`},
		{"wake twice, empty first", "lab-b", url.Values{"csrf": {csrf}, "text": {"wake up"}, "wake": {"", "1"}}, `the field "wake" is sent more than once`},
		{"csrf twice, this session's first", "lab-a", url.Values{"csrf": {csrf, otherCSRF}, "text": {"hi"}}, `the field "csrf" is sent more than once`},
		{"csrf twice, this session's second", "lab-a", url.Values{"csrf": {"x", csrf}, "text": {"hi"}}, `the field "csrf" is sent more than once`},
		{"another field twice", "lab-a", url.Values{"csrf": {csrf}, "text": {"hi"}, "s3cr3t !": {"1", "2"}}, "a field is sent more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.written(tc.spore)
			a := u.post("/ui/spores/"+tc.spore+"/prompt", tc.form, "Accept", "text/plain")
			require.Equal(t, http.StatusBadRequest, a.status, a.body)
			require.Equal(t, "the form could not be read: "+tc.msg+"\n", a.body)
			require.Equal(t, before, f.written(tc.spore), "nothing written")
			require.Zero(t, updates.Updates.Load(), "no write transaction")
			require.Empty(t, f.rt.BridgeOf(tc.spore).Prompts())
		})
	}
	require.Equal(t, state.Paused, f.written("lab-b").sp.Desired, "not woken")

	// The login form: a token twice makes no session, whichever is good.
	for _, form := range []url.Values{
		{"token": {tok, "x"}, "next": {"/ui/"}},
		{"token": {"x", tok}, "next": {"/ui/"}},
		{"token": {tok}, "next": {"/ui/", "/ui/spores/lab-a"}},
	} {
		n := f.user()
		a := n.post("/ui/login", form, "Accept", "text/plain")
		require.Equal(t, http.StatusBadRequest, a.status, a.body)
		require.True(t, strings.HasPrefix(a.body, "the login form could not be read: the field "), a.body)
		require.Nil(t, n.cookie(), "a session was made")
		require.Empty(t, a.header.Values("Set-Cookie"))
	}

	// The logout form: csrf twice ends nothing.
	a := u.post("/ui/logout", url.Values{"csrf": {csrf, csrf}}, "Accept", "text/plain")
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	require.Equal(t, "the form could not be read: the field \"csrf\" is sent more than once\n", a.body)
	require.Empty(t, a.header.Values("Set-Cookie"))
	require.Equal(t, http.StatusOK, u.get("/ui/spores/lab-a").status, "still logged in")
	require.Zero(t, updates.Updates.Load(), "no write transaction")
}
