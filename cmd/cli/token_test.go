package cli

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestTokenRotate(t *testing.T) {
	c := newAPIColony(t)
	old := c.tokens["a"]
	// Its teammate b sleeps as a person left it, so a swarm tell would be
	// refused: a summons proves the token.
	c.asOK("a", "mycologist", "ask", "still me")

	out := c.ok("token", "rotate", "a")
	require.Equal(t, "token/a rotated\n", out)
	hash := statetest.Read(t, c.st, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "a") })
	require.True(t, hash.Valid())
	require.False(t, hash.Matches(old))

	r := c.as("a", nil, "swarm", "tell", "tester", "me again")
	require.Equal(t, ExitUnauthorized, r.code, "the old token no longer works: %s", r.err)

	events := c.ok("events", "a", "-o", "json")
	require.Contains(t, events, "token-rotated")
	require.NotContains(t, events, string(hash), "not even the hash is shown")

	r = c.run("", "token", "rotate", "ghost")
	require.Equal(t, ExitNotFound, r.code)
	r = c.run("", "token", "rotate")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "token/a\n", c.ok("token", "rotate", "a", "-o", "name"))
}

// TestCreateKeepsRanksSingle: one arch, one colony mycologist per
// colony, one [swarm] mycologist per swarm (of a colony).
func TestCreateKeepsRanksSingle(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "lead", "--rank", "swarm", "--colony", "lab", "--swarm", "red")
	r := c.run("", "create", "lead2", "--rank", "swarm", "--colony", "lab", "--swarm", "red")
	require.Equal(t, ExitConflict, r.code, r.err)
	require.Contains(t, r.err, "spore lead is already the [swarm] mycologist of swarm red in colony lab")
	c.ok("create", "lead3", "--rank", "swarm", "--colony", "lab", "--swarm", "blue")
	c.ok("create", "lead4", "--rank", "swarm", "--colony", "far", "--swarm", "red")
	r = c.run("", "create", "lead5", "--rank", "swarm", "--colony", "lab")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "--rank swarm needs --swarm")
	c.ok("create", "member", "--colony", "lab", "--swarm", "red", "--role", "coder")

	c.ok("create", "arch", "--rank", "arch")
	r = c.run("", "create", "arch2", "--rank", "arch", "--colony", "far")
	require.Equal(t, ExitConflict, r.code)
	c.ok("create", "myco", "--rank", "colony", "--colony", "lab")
	r = c.run("", "create", "myco2", "--rank", "colony", "--colony", "lab")
	require.Equal(t, ExitConflict, r.code)
	c.ok("create", "myco3", "--rank", "colony", "--colony", "far")
}

// TestTokenOperator: create prints a token once (stdout only, a warning
// on stderr), keeps only its hash; list shows names and times, never a
// hash; revoke removes it; bad names and misuse are usage errors.
func TestTokenOperator(t *testing.T) {
	c := newFakeColony(t)
	r := c.run("", "token", "create", "--operator", "alice")
	require.Equal(t, 0, r.code, r.err)
	token := strings.TrimSuffix(r.out, "\n")
	require.True(t, strings.HasPrefix(token, state.OperatorTokenPrefix), "%q", token)
	require.Equal(t, token+"\n", r.out, "stdout is the token alone")
	require.Contains(t, r.err, "operator/alice created")
	require.Contains(t, r.err, "shown only now")
	require.NotContains(t, r.err, token)

	// -o name prints kind/name only, which would lose a new token: refused
	// before anything is made; -o json carries the token.
	r = c.run("", "token", "create", "--operator", "carol", "-o", "name")
	require.Equal(t, 2, r.code, r.err)
	require.Contains(t, r.err, "token create -o name would not print the token")
	require.Empty(t, r.out)

	st, err := dirstore.Open(context.Background(), c.store, dirstore.Options{})
	require.NoError(t, err)
	s := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	ops := s.OperatorTokens()
	require.Len(t, ops, 1)
	require.Equal(t, "alice", ops[0].Name)
	require.True(t, ops[0].Hash.Matches(token))
	require.Equal(t, testNow.UTC().Truncate(time.Second), ops[0].Created)
	require.Equal(t, "local", s.Runtime, "the other settings are kept")
	st.Close()
	// Nothing in the store's files holds the token.
	require.NoError(t, filepath.WalkDir(c.store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NotContains(t, string(b), token, p)
		return err
	}))

	r = c.run("", "token", "create", "--operator", "alice")
	require.Equal(t, ExitConflict, r.code, r.err)
	require.Contains(t, r.err, "revoke it first")
	bob := strings.TrimSpace(c.ok("token", "create", "--operator", "bob", "-o", "json"))
	require.Contains(t, bob, `"operator": "bob"`)
	require.Contains(t, bob, `"token": "spo_`)

	out := c.ok("token", "list", "--operator")
	require.Equal(t, "OPERATOR   CREATED\nalice      "+testNow.UTC().Format(time.RFC3339)+"\nbob        "+testNow.UTC().Format(time.RFC3339)+"\n", out)
	js := c.ok("token", "list", "--operator", "-o", "json")
	require.NotContains(t, js, string(ops[0].Hash))
	require.NotContains(t, js, "hash")
	require.Equal(t, "operator/alice\noperator/bob\n", c.ok("token", "list", "--operator", "-o", "name"))

	require.Equal(t, "operator/alice revoked\n", c.ok("token", "revoke", "--operator", "alice"))
	require.Equal(t, "operator/bob\n", c.ok("token", "list", "--operator", "-o", "name"))
	r = c.run("", "token", "revoke", "--operator", "alice")
	require.Equal(t, ExitNotFound, r.code, r.err)
	c.ok("token", "revoke", "--operator", "bob")
	require.Equal(t, "{\n  \"operators\": []\n}\n", c.ok("token", "list", "--operator", "-o", "json"))

	for _, args := range [][]string{
		{"token", "create"},
		{"token", "create", "--operator", "Alice!"},
		{"token", "create", "--operator", ""},
		{"token", "create", "--operator", "a", "extra"},
		{"token", "revoke"},
		{"token", "list", "extra"},
	} {
		r := c.run("", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Empty(t, r.out, "%v", args)
	}
	require.Equal(t, "", c.ok("token", "list", "--operator", "--no-headers"))
}

// TestTokenListAlone: token list with no flag lists every spore's token
// state and the operators, in one table, never a token or a hash.
func TestTokenListAlone(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake") // its start issues a token
	c.ok("create", "b")           // never started: none
	op := strings.TrimSpace(c.ok("token", "create", "--operator", "alice"))
	at := testNow.UTC().Format(time.RFC3339)

	st, err := dirstore.Open(context.Background(), c.store, dirstore.Options{})
	require.NoError(t, err)
	hash := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "a") })
	require.NoError(t, st.Close())
	require.True(t, hash.Valid())

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"table", []string{"token", "list"}, "KIND       NAME    TOKEN   CREATED\n" +
			"spore      a       set     -\n" +
			"spore      b       none    -\n" +
			"operator   alice   set     " + at + "\n"},
		{"name", []string{"token", "list", "-o", "name"}, "spore/a\nspore/b\noperator/alice\n"},
		{"json", []string{"token", "list", "-o", "json"}, `{"spores":[{"id":"a","token":"set"},{"id":"b","token":"none"}],"operators":[{"name":"alice","created":"` + at + `"}]}`},
		{"operators only", []string{"token", "list", "--operator"}, "OPERATOR   CREATED\nalice      " + at + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := c.ok(tc.args...)
			if tc.name == "json" {
				require.JSONEq(t, tc.want, out)
			} else {
				require.Equal(t, tc.want, out)
			}
			require.NotContains(t, out, string(hash))
			require.NotContains(t, out, op)
			require.NotContains(t, out, "spo_")
			require.NotContains(t, out, "spt_")
		})
	}
}
