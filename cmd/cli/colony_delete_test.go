package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// colony delete removes a colony's settings: refused with exit 5 while a
// spore is in it, exit 4 for a colony with nothing stored, nothing
// written by either; colony set of a colony no spore has warns and still
// keeps the setting.
func TestColonyDeleteAndEmptyColonyWarning(t *testing.T) {
	c := newFakeColony(t)
	r := c.run("", "colony", "set", "labb", "--sleep-after", "30m")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Equal(t, "colony/labb configured\n", r.out)
	require.Contains(t, r.err, "warning: no spore is in colony labb")
	require.Contains(t, c.ok("colony", "list"), "labb")

	c.ok("create", "w1", "--colony", "lab")
	r = c.run("", "colony", "set", "lab", "--sleep-after", "30m")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Empty(t, r.err, "a colony with spores: no warning")

	r = c.run("", "colony", "delete", "lab")
	require.Equal(t, ExitConflict, r.code, r.err)
	require.Contains(t, r.err, "1 spore(s) are in it")
	require.Empty(t, r.out)
	require.Contains(t, c.ok("colony", "list", "-o", "json"), `"sleep_after": "30m0s"`, "refused: the settings stay")

	r = c.run("", "colony", "delete", "nope")
	require.Equal(t, ExitNotFound, r.code, r.err)
	require.Contains(t, r.err, "no such colony")

	require.Equal(t, "colony/labb deleted\n", c.ok("colony", "delete", "labb"))
	require.NotContains(t, c.ok("colony", "list"), "labb")
	r = c.run("", "colony", "delete", "labb")
	require.Equal(t, ExitNotFound, r.code, "deleted once: %s", r.err)

	for _, args := range [][]string{{"colony", "delete"}, {"colony", "delete", "a", "b"}, {"colony", "delete", "Not Valid"}} {
		r = c.run("", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
	}
}

// The kube flags on a store whose runtime is local warn once on stderr,
// naming the flags given; without them, nothing is said.
func TestKubeFlagsOnALocalStoreWarn(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1")
	r := c.run("", "status", "-n", "team", "--context", "prod", "--kubeconfig", "/nowhere")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Equal(t, "warning: the local runtime ignores --kubeconfig, --context, --namespace (Kubernetes flags): this store's spores run on this machine, and the flags apply once the store runs on Kubernetes (sporectl init --runtime kube)\n", r.err)
	for _, args := range [][]string{{"list", "-n", "team"}, {"set", "budget", "w1", "--tokens", "5", "--context", "prod"}, {"describe", "w1", "-n", "x"}} {
		r = c.run("", args...)
		require.Equal(t, ExitOK, r.code, r.err)
		require.Contains(t, r.err, "warning: the local runtime ignores --", "%v", args)
		require.Equal(t, 1, strings.Count(r.err, "warning:"), "once per command: %v", args)
	}
	r = c.run("", "status")
	require.Empty(t, r.err)
}
