package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestStoreCopyRoundTrip moves a colony from a directory store to
// PostgreSQL and back with the real binary, and compares `events -o json`
// of every spore, `list -o json` and `check` at each step.
func TestStoreCopyRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dir")
	pg := pgtest.NewDatabase(t)
	back := filepath.Join(t.TempDir(), "back")

	runOK(t, dir, "init", "--agent", "echo")
	ids := []string{"arch", "lab-myco", "w-1", "w-2"}
	runOK(t, dir, "create", "arch", "--rank", "arch", "--colony", "hq")
	runOK(t, dir, "create", "lab-myco", "--rank", "colony", "--colony", "lab")
	runOK(t, dir, "create", "w-1", "--colony", "lab", "--swarm", "build", "--role", "coder")
	runOK(t, dir, "create", "w-2", "--colony", "lab", "--memory", "1Gi")
	for i := 0; i < 3; i++ {
		runOK(t, dir, "stop", "w-1")
		runOK(t, dir, "sleep", "w-1")
	}

	snapshot := func(store string) map[string]string {
		out := map[string]string{"list": string(runOK(t, store, "list", "-o", "json"))}
		for _, id := range ids {
			out[id] = string(runOK(t, store, "events", id, "-o", "json"))
		}
		return out
	}
	want := snapshot(dir)
	require.Contains(t, want["w-1"], `"seq": 7`, "the fixture has history to copy")

	out := string(runOK(t, dir, "store", "copy", dir, pg))
	require.NotContains(t, out, pgtest.Shared(t).Password, "no password in output")
	require.Equal(t, want, snapshot(pg), "dir → postgres")
	runOK(t, pg, "check")

	runOK(t, pg, "store", "copy", pg, back)
	require.Equal(t, want, snapshot(back), "postgres → dir")
	runOK(t, back, "check")

	// A non-empty destination is refused (exit 5) and left as it was.
	cmd := sporectl(dir, "store", "copy", dir, back)
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 5, cmd.ProcessState.ExitCode(), "%s", b)
	require.True(t, strings.Contains(string(b), "not empty"), "%s", b)
	require.Equal(t, want, snapshot(back))
}
