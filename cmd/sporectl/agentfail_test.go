package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/statetest"
)

// userWithClaude is sporectl as newUser runs it, with
// $SPORECTL_CLAUDE_BIN naming bin: a claude the person pointed at.
func userWithClaude(t *testing.T, store, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPORECTL_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SPORECTL_STORE="+store, "PATH=/usr/bin:/bin", "SPORECTL_CLAUDE_BIN="+bin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

// TestAClaudeNamedWhereItIsNot: $SPORECTL_CLAUDE_BIN naming no file is
// said by init (a warning, exit 0), by the real bridge as it stops at
// start, by create --wake --wait (exit 9, with the path) and by status
// (Dead, the reason naming the path) — not Healthy/idle until a prompt.
func TestAClaudeNamedWhereItIsNot(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	gone := filepath.Join(t.TempDir(), "nowhere", "claude")
	run := func(args ...string) (string, string, int) { return userWithClaude(t, store, gone, args...) }
	t.Cleanup(func() { _, _, _ = run("delete", "w1") })
	reason := "claude: not found at " + gone + " (named by $SPORECTL_CLAUDE_BIN)"

	_, errOut, code := run("init")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "warning: the agent is claude, but claude: not found at "+gone)

	out, errOut, code := run("create", "w1", "--wake", "--wait", "20s")
	require.Equal(t, 9, code, "a bridge that stops at start is exit 9: %s", errOut)
	require.Contains(t, out, "spore/w1 created")
	require.Contains(t, errOut, "its bridge exited at start: "+reason)

	out, _, code = run("status", "-o", "json", "w1")
	require.Equal(t, 3, code)
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "Dead", doc.Spores[0].Effective)
	require.Equal(t, "Exited: "+reason, doc.Spores[0].Reason)
}

// TestAClaudeThatExitsAtOnce: a claude that is there but exits before it
// writes a line (a broken install) lets the real bridge come up, and its
// first prompt's failed start is what status names (Suspect,
// AgentCannotStart, with the agent's last words) and what wake --wait
// fails with (exit 9), instead of Healthy or "the agent keeps dying".
func TestAClaudeThatExitsAtOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	bin := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\ncat >/dev/null\necho 'claude: cannot find module ./cli.js' >&2\nexit 1\n"), 0o755))
	run := func(args ...string) (string, string, int) { return userWithClaude(t, store, bin, args...) }
	t.Cleanup(func() { _, _, _ = run("delete", "w1") })

	_, errOut, code := run("init")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "warning: the agent")

	out, errOut, code := run("create", "w1", "--wake", "--wait", "20s")
	require.Equal(t, 0, code, "the bridge comes up: nothing has run its agent yet: %s", errOut)
	require.Contains(t, out, "spore/w1 woken")

	_, errOut, code = run("prompt", "w1", "hello")
	require.Equal(t, 0, code, errOut)

	var doc statusDoc
	require.Eventually(t, func() bool {
		out, _, _ = run("status", "-o", "json", "w1")
		doc = statusDoc{}
		return json.Unmarshal([]byte(out), &doc) == nil && len(doc.Spores) == 1 && doc.Spores[0].Effective == "Suspect" &&
			strings.HasPrefix(doc.Spores[0].Reason, "the agent cannot start:")
	}, 20*time.Second, 100*time.Millisecond, "status: %s", out)
	require.Contains(t, doc.Spores[0].Reason, "exited before writing a line: exit status 1; its stderr ends: claude: cannot find module ./cli.js")
	require.Contains(t, out, `"agent_error": "exited before writing a line: exit status 1; its stderr ends: claude: cannot find module ./cli.js"`)

	out, _, code = run("status", "w1")
	require.Equal(t, 3, code)
	require.Contains(t, out, "the agent cannot start: exited before writing a line")

	out, errOut, code = run("wake", "w1", "--wait", "10s")
	require.Equal(t, 9, code, errOut)
	require.Contains(t, out, "spore/w1 unchanged")
	require.Contains(t, errOut, "error: wake w1: its bridge is up but its agent cannot start: exited before writing a line: exit status 1; its stderr ends: claude: cannot find module ./cli.js (see 'sporectl logs w1')")
}
