package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// runAs runs sporectl on store with $USER set to user ("" unset).
func runAs(t *testing.T, store, user string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	f.Now = func() time.Time { return testNow }
	f.Getenv = func(k string) string {
		switch k {
		case EnvStore:
			return store
		case "USER":
			return user
		case sporeenv.ClaudeBin: // an agent init finds, so it warns of nothing
			return "/bin/true"
		}
		return ""
	}
	code := RunWith(context.Background(), f, args)
	return result{out.String(), errb.String(), code}
}

func operatorsOf(t *testing.T, store string) []state.OperatorToken {
	t.Helper()
	st, err := dirstore.Open(context.Background(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	var s state.Settings
	require.NoError(t, st.View(context.Background(), func(tx state.Tx) (err error) { s, err = tx.Settings(context.Background()); return }))
	return s.OperatorTokens()
}

// pageLogin posts token to the page serve mounts over store, and returns
// the status (303 for a session) and body.
func pageLogin(t *testing.T, store, token string) (int, string) {
	t.Helper()
	st, err := dirstore.Open(context.Background(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	ts := httptest.NewServer((&serveOptions{f: f}).handler(context.Background(), &mycelia.Server{Store: st}, st))
	defer ts.Close()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	c := *ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestInitFirstOperator: a new store gets its first operator from init
// ($USER, or --operator), whose token is printed once on stdout as token
// create prints one, with how to log in on stderr, and logs in to the
// page; --no-operator makes none (the page then says how to make one);
// an existing store gets a first operator only when named, never a second.
func TestInitFirstOperator(t *testing.T) {
	dir := t.TempDir()

	store := filepath.Join(dir, "default")
	r := runAs(t, store, "dora", "init")
	require.Equal(t, 0, r.code, r.err)
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	require.Len(t, lines, 2, "%q", r.out)
	require.Equal(t, "store "+store+" created", lines[0])
	token := lines[1]
	require.True(t, strings.HasPrefix(token, state.OperatorTokenPrefix), "%q", token)
	require.Contains(t, r.err, "operator/dora created")
	require.Contains(t, r.err, "shown only now")
	require.Contains(t, r.err, "Log in to the page with it: run 'sporectl serve' and open http://127.0.0.1:7070/ui/")
	require.NotContains(t, r.err, token)
	ops := operatorsOf(t, store)
	require.Len(t, ops, 1)
	require.Equal(t, "dora", ops[0].Name)
	require.True(t, ops[0].Hash.Matches(token))
	require.NoError(t, filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NotContains(t, string(b), token, p)
		return err
	}))
	code, body := pageLogin(t, store, token)
	require.Equal(t, http.StatusSeeOther, code, "init's token logs in: %s", body)

	// Again: the store is unchanged, and no second token is made.
	r = runAs(t, store, "dora", "init")
	require.Equal(t, "store "+store+" unchanged\n", r.out)
	require.Empty(t, r.err)
	require.Len(t, operatorsOf(t, store), 1)

	// --operator NAME, -o json: one document with the token under "operator".
	store = filepath.Join(dir, "json")
	r = runAs(t, store, "dora", "init", "--operator", "alice", "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var got struct {
		Results  []actionResult
		Operator operatorCreated
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &got), r.out)
	require.Equal(t, "created", got.Results[0].Action)
	require.Equal(t, "alice", got.Operator.Operator)
	require.True(t, strings.HasPrefix(got.Operator.Token, state.OperatorTokenPrefix))
	require.Equal(t, "alice", operatorsOf(t, store)[0].Name)

	// No $USER: "operator", as `sporectl prompt` names a person then.
	store = filepath.Join(dir, "nouser")
	r = runAs(t, store, "", "init")
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `^store `+store+` created\nspo_\S+\n$`, r.out)
	require.Equal(t, "operator", operatorsOf(t, store)[0].Name)

	// -o name prints kind/name only: it would lose the token, so init
	// refuses it before making anything, unless no token is made.
	store = filepath.Join(dir, "named")
	r = runAs(t, store, "erin", "init", "-o", "name")
	require.Equal(t, 2, r.code, r.err)
	require.Contains(t, r.err, "init -o name would not print the operator token")
	require.Empty(t, r.out)
	require.NoDirExists(t, store, "nothing was made")
	r = runAs(t, store, "erin", "init", "-o", "name", "--no-operator")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, store+"\n", r.out)

	// --no-operator: no token anywhere; the page says how to make one.
	store = filepath.Join(dir, "none")
	r = runAs(t, store, "dora", "init", "--no-operator")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "store "+store+" created\n", r.out)
	require.NotContains(t, r.err, "operator/")
	require.Empty(t, operatorsOf(t, store))
	code, body = pageLogin(t, store, "spo_anything")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "no operator exists: run `sporectl token create --operator NAME`")

	// An existing store without one: init alone makes none, --operator
	// makes the first, and a second --operator none (token create's job).
	r = runAs(t, store, "dora", "init")
	require.Equal(t, "store "+store+" unchanged\n", r.out)
	require.Empty(t, operatorsOf(t, store))
	r = runAs(t, store, "dora", "init", "--operator", "bob")
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `^store `+store+` configured\nspo_\S+\n$`, r.out)
	require.Contains(t, r.err, "operator/bob created")
	r = runAs(t, store, "dora", "init", "--operator", "carol")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "store "+store+" unchanged\n", r.out)
	require.Contains(t, r.err, "operator tokens already")
	ops = operatorsOf(t, store)
	require.Len(t, ops, 1)
	require.Equal(t, "bob", ops[0].Name)

	// Bad values: exit 2, no store made.
	for _, args := range [][]string{
		{"init", "--operator", "Bad!"},
		{"init", "--operator", ""},
		{"init", "--operator", "alice", "--no-operator"},
	} {
		bad := filepath.Join(dir, "bad")
		r := runAs(t, bad, "dora", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Contains(t, r.err, "--operator", "%v", args)
		_, err := os.Stat(bad)
		require.ErrorIs(t, err, fs.ErrNotExist, "%v", args)
	}
	// $USER that is no operator name: "operator" instead, as for prompt.
	store = filepath.Join(dir, "baduser")
	r = runAs(t, store, "Not A Name", "init")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "operator", operatorsOf(t, store)[0].Name)
}
