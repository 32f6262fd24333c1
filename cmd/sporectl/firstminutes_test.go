package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state/statetest"
	"github.com/stretchr/testify/require"
)

// newUser is sporectl as a new user runs it on a machine without Claude
// Code: no claude on $PATH, no $SPORECTL_CLAUDE_BIN.
func newUser(t *testing.T, store string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPORECTL_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SPORECTL_STORE="+store, "PATH="+t.TempDir())
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

const noClaudeReason = "no claude executable: pass --claude-bin, set $SPORECTL_CLAUDE_BIN, or use --agent echo"

// TestFirstFiveMinutesWithoutClaude: the reason a bridge will not start
// reaches the person at every step — init warns, wake --wait fails with
// it (exit 9), status shows it, logs prints the bridge's stderr.
func TestFirstFiveMinutesWithoutClaude(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	t.Cleanup(func() { _, _, _ = newUser(t, store, "delete", "w1") })

	_, errOut, code := newUser(t, store, "init")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "warning: the agent is claude, but no claude executable")

	out, errOut, code := newUser(t, store, "create", "w1", "--wake")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "created")

	out, errOut, code = newUser(t, store, "wake", "w1", "--wait", "20s")
	require.Equal(t, 9, code, "a bridge that exits at start is exit 9 (Runtime): %s", errOut)
	require.Contains(t, errOut, noClaudeReason)
	require.NotContains(t, errOut, "not answering")
	// Wished awake already: "unchanged" while the first bridge had not yet
	// exited, "woken" if this wake had to start it again.
	require.Regexp(t, `^spore/w1 (woken|unchanged)\n$`, out)

	out, _, code = newUser(t, store, "status", "-o", "json", "w1")
	require.Equal(t, 3, code)
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "Dead", doc.Spores[0].Effective)
	require.Equal(t, "Exited: "+noClaudeReason, doc.Spores[0].Reason)
	out, _, _ = newUser(t, store, "status", "w1")
	require.Contains(t, out, "Exited: no claude executable")

	// The next wake restarts it and says why the last one died.
	_, errOut, code = newUser(t, store, "wake", "w1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "had exited: "+noClaudeReason)

	require.Eventually(t, func() bool {
		out, _, code = newUser(t, store, "logs", "w1")
		return code == 0 && strings.Contains(out, "error: "+noClaudeReason)
	}, 10*time.Second, 50*time.Millisecond, "logs: %s", out)
	out, errOut, code = newUser(t, store, "logs", "w1", "--previous")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "error: "+noClaudeReason)
	out, errOut, code = newUser(t, store, "logs", "w1", "--tail", "1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"), "--tail 1: %q", out)

	_, errOut, code = newUser(t, store, "logs", "ghost")
	require.Equal(t, 4, code, errOut)

	// -f follows until Ctrl-C, which ends it quietly.
	cmd := exec.Command(binPath, "logs", "w1", "-f")
	cmd.Env = append(os.Environ(), "SPORECTL_STORE="+store)
	var ferr bytes.Buffer
	cmd.Stderr = &ferr
	fout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// Ctrl-C once it has printed: by then its handler is in place (a fixed
	// sleep could end before a loaded machine got it that far).
	w := watch(fout)
	require.Eventually(t, func() bool { return w.count("error: "+noClaudeReason) > 0 }, 30*time.Second, 20*time.Millisecond, "logs -f prints the log")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), "Ctrl-C on logs -f is exit 0: %s", ferr.String())
	require.Empty(t, ferr.String())
}
