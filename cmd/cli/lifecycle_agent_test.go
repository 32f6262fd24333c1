package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWakeWaitOfAnAgentThatCannotStart: a bridge that answers but says
// its agent cannot start fails wake --wait (exit 9) with the bridge's
// words, as create --wake --wait; status names it in REASON and -o json
// carries it, bounded and with its control characters shown.
func TestWakeWaitOfAnAgentThatCannotStart(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1", "--wake")
	why := "exited before writing a line: exit status 1; its stderr ends: \x1b[31mError\x1b[0m: bad install " + strings.Repeat("x", 1000)
	c.rt.BridgeOf("w1").SetAgentError(why)

	r := c.run("", "wake", "w1", "--wait", "10s")
	require.Equal(t, ExitRuntime, r.code, r.err)
	require.Contains(t, r.err, `error: wake w1: its bridge is up but its agent cannot start: exited before writing a line: exit status 1; its stderr ends: \x1b[31mError\x1b[0m: bad install xxx`)
	require.Contains(t, r.err, "(see 'sporectl logs w1')")
	require.NotContains(t, r.err, "\x1b")
	require.Less(t, len(r.err), 600, "the bridge's words are cut")

	r = c.run("", "status", "w1")
	require.Equal(t, ExitUnhealthy, r.code)
	require.Contains(t, r.out, "Suspect")
	require.Contains(t, r.out, `the agent cannot start: exited before writing a line: exit status 1`)

	r = c.run("", "status", "-o", "json", "w1")
	var doc struct {
		Spores []struct {
			Effective string
			Reason    string
			Observed  struct {
				Reason     string `json:"reason"`
				AgentError string `json:"agent_error"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &doc), r.out)
	require.Equal(t, "Suspect", doc.Spores[0].Effective)
	require.Equal(t, "AgentCannotStart", doc.Spores[0].Observed.Reason)
	require.True(t, strings.HasPrefix(doc.Spores[0].Observed.AgentError, `exited before writing a line: exit status 1; its stderr ends: \x1b[31mError`))
	require.LessOrEqual(t, len(doc.Spores[0].Observed.AgentError), 256)

	c.ok("create", "w2", "--wake")
	c.rt.BridgeOf("w2").SetAgentError("start: start claude /opt/claude: permission denied")
	r = c.run("", "create", "w3", "--wake", "--wait", "5s")
	require.Equal(t, ExitOK, r.code, "a bridge whose agent reported nothing is up: %s", r.err)
	require.Contains(t, r.out, "spore/w3 woken")

	// Once a turn starts, it is healthy again.
	c.rt.BridgeOf("w1").SetAgentError("")
	r = c.run("", "wake", "w1", "--wait", "5s")
	require.Equal(t, ExitOK, r.code, r.err)

	r = c.run("", "create", "w4", "--wait", "5s")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "--wait needs --wake")
}

// TestNoOpLifecycleSaysUnchanged: wake, sleep and stop of a spore that
// is so already, and wished so by a person, say "unchanged" (exit 0);
// the first of each, and a wake that had to start it again, say what
// they did.
func TestNoOpLifecycleSaysUnchanged(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1", "w2")
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"wake", "w1"}, "spore/w1 woken\n"},
		{[]string{"wake", "w1"}, "spore/w1 unchanged\n"},
		{[]string{"wake", "w1", "w2"}, "spore/w1 unchanged\nspore/w2 woken\n"},
		{[]string{"sleep", "w1"}, "spore/w1 asleep\n"},
		{[]string{"sleep", "w1"}, "spore/w1 unchanged\n"},
		{[]string{"stop", "w1"}, "spore/w1 stopped\n"},
		{[]string{"stop", "w1"}, "spore/w1 unchanged\n"},
		{[]string{"wake", "w1", "-o", "name"}, "spore/w1\n"},
		{[]string{"wake", "w1", "-o", "name"}, "spore/w1\n"},
	}
	for _, s := range steps {
		r := c.run("", s.args...)
		require.Equal(t, ExitOK, r.code, "%v: %s", s.args, r.err)
		require.Equal(t, s.want, r.out, "%v", s.args)
	}
	// Wished awake, but its process died: the wake starts it, and says so.
	c.rt.Kill("w1", "Exited")
	r := c.run("", "wake", "w1")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Equal(t, "spore/w1 woken\n", r.out)
}
