package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestTokenRotate(t *testing.T) {
	c := newAPIColony(t)
	old := c.tokens["a"]
	c.asOK("a", "swarm", "tell", "tester", "still me")

	out := c.ok("token", "rotate", "a")
	require.Equal(t, "token/a rotated\n", out)
	var hash state.TokenHash
	require.NoError(t, c.st.View(context.Background(), func(tx state.Tx) error {
		var err error
		hash, err = tx.TokenHash(context.Background(), "a")
		return err
	}))
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
