package local

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// TestBridgeFatalErrorObserved: the real bridge, told to run Claude Code
// where there is none, exits at start; Observe carries its own words
// from the run log, and WaitReady's error says them.
func TestBridgeFatalErrorObserved(t *testing.T) {
	ctx := context.Background()
	// No claude anywhere the bridge looks: not on its PATH, no
	// $SPORECTL_CLAUDE_BIN.
	r := newRuntime(t, "claude", "PATH="+t.TempDir())
	t.Cleanup(func() { _ = r.Delete(ctx, "fatal-noclaude", true) })
	require.NoError(t, r.Start(ctx, spore("fatal-noclaude"), reconcile.Launch{Creds: creds}))

	var po reconcile.PodObservation
	require.Eventually(t, func() bool {
		var ok bool
		po, ok = observe(t, r, "fatal-noclaude")
		return ok && po.State == reconcile.PodFailed
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "Exited", po.Reason)
	require.True(t, po.Exited)
	require.Equal(t, "no claude executable: pass --claude-bin, set $SPORECTL_CLAUDE_BIN, or use --agent echo", bridge.FatalError(po.ExitLog))
	require.NotContains(t, po.ExitLog, creds.BridgeToken)
	require.NotContains(t, po.ExitLog, creds.APIToken)

	err := r.WaitReady(ctx, "fatal-noclaude", 5*time.Second)
	require.ErrorContains(t, err, "exited: no claude executable")
}

// chattyBridge is a Binary that writes numbered lines, a line holding the
// bridge token and, a little later, a line "late" to its stderr, then
// runs the real bridge (same pid).
func chattyBridge(t *testing.T, run string) string {
	var body strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&body, "echo '%s line %d' >&2\n", run, i)
	}
	fmt.Fprintf(&body, "echo 'token %s end' >&2\n", creds.BridgeToken)
	fmt.Fprintf(&body, "(sleep 0.5; echo '%s late' >&2) &\n", run)
	fmt.Fprintf(&body, "exec %q \"$@\"\n", sporectlBin)
	return script(t, "chatty-"+run, body.String())
}

func logs(t *testing.T, r *Runtime, id string, opt reconcile.LogOptions) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, r.Logs(context.Background(), id, opt, &b))
	return b.String()
}

// TestLogs: the run log read whole, its last lines only, the run before
// a restart (--previous), followed across a restart until the context
// ends; never with the spore's tokens.
func TestLogs(t *testing.T) {
	ctx := context.Background()
	const id = "logs-chatty"
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, id, true) })

	var none strings.Builder
	require.ErrorIs(t, r.Logs(ctx, id, reconcile.LogOptions{}, &none), state.ErrNotFound, "never started: no log")

	r.cfg.Binary = chattyBridge(t, "first")
	require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Creds: creds}))
	waitReady(t, r, id)
	require.Eventually(t, func() bool { return strings.Contains(logs(t, r, id, reconcile.LogOptions{}), "first late") }, 5*time.Second, 20*time.Millisecond)

	all := logs(t, r, id, reconcile.LogOptions{})
	require.Contains(t, all, "first line 1\n")
	require.Contains(t, all, "token [redacted] end")
	require.NotContains(t, all, creds.BridgeToken)
	lines := strings.SplitAfter(strings.TrimSuffix(all, "\n"), "\n")
	require.Equal(t, strings.Join(lines[len(lines)-2:], "")+"\n", logs(t, r, id, reconcile.LogOptions{Tail: 2}), "--tail 2: the last two lines")
	require.Equal(t, all, logs(t, r, id, reconcile.LogOptions{Tail: 10000}), "more lines than the log has: all of it")
	require.ErrorIs(t, r.Logs(ctx, id, reconcile.LogOptions{Previous: true}, &none), state.ErrNotFound, "no restart yet: no previous log")

	// Follow, then restart the bridge under it: the new run's lines
	// come through too.
	fctx, cancel := context.WithCancel(ctx)
	var followed testutil.Buffer
	done := make(chan error, 1)
	go func() { done <- r.Logs(fctx, id, reconcile.LogOptions{Follow: true, Tail: 1}, &followed) }()
	require.NoError(t, r.Stop(ctx, id))
	r.cfg.Binary = chattyBridge(t, "second")
	require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Creds: creds}))
	require.Eventually(t, func() bool { return strings.Contains(followed.String(), "second late") }, 10*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("a followed log did not end with its context")
	}
	require.NotContains(t, followed.String(), "first line", "--tail 1 started at the last line")
	require.Contains(t, followed.String(), "second line 1")
	require.NotContains(t, followed.String(), creds.BridgeToken)

	prev := logs(t, r, id, reconcile.LogOptions{Previous: true})
	require.Contains(t, prev, "first line 1")
	require.NotContains(t, prev, "second")
	cur := logs(t, r, id, reconcile.LogOptions{})
	require.Contains(t, cur, "second line 1")
	require.NotContains(t, cur, "first", "each start begins a new log")
}
