package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// exitsAtStart is a runtime whose bridges exit as soon as they start,
// saying why on their last line of stderr, as a bridge with no claude
// executable does.
type exitsAtStart struct {
	*reconciletest.Runtime
	lastWords string
	logs      string
}

func (e exitsAtStart) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	if err := e.Runtime.Start(ctx, s, l); err != nil {
		return err
	}
	e.Set(reconcile.PodObservation{ID: s.ID, State: reconcile.PodFailed, Reason: "Exited", Exited: true, ExitLog: e.lastWords})
	e.BridgeOf(s.ID).SetUp(false)
	return nil
}

func (e exitsAtStart) Logs(ctx context.Context, id string, opt reconcile.LogOptions, w io.Writer) error {
	if opt.Follow {
		io.WriteString(w, e.logs)
		<-ctx.Done()
		return ctx.Err()
	}
	_, err := io.WriteString(w, e.logs)
	return err
}

func (c *fakeColony) runWith(ctx context.Context, rt reconcile.Runtime, env map[string]string, args ...string) result {
	c.t.Helper()
	var out, errb bytes.Buffer
	w := *c
	w.runtime, w.getenv = rt, func(k string) string { return env[k] }
	code := RunWith(ctx, w.factory(strings.NewReader(""), &out, &errb), args)
	return result{out.String(), errb.String(), code}
}

const noClaude = "error: no claude executable: pass --claude-bin, set $SPORECTL_CLAUDE_BIN, or use --agent echo\nRun 'sporectl --help' for usage.\n"

// TestBridgeExitReasonReachesThePerson: a bridge that exits at start says
// why in status's reason, `wake --wait` fails with it (exit 9, not 3), and
// a plain `wake` of it again says it on stderr.
func TestBridgeExitReasonReachesThePerson(t *testing.T) {
	c := newFakeColony(t)
	rt := exitsAtStart{Runtime: c.rt, lastWords: "level=INFO msg=x\n" + strings.Replace(noClaude, "executable", "exe\x1b[31mcutable", 1)}
	c.ok("create", "w1")

	r := c.runWith(context.Background(), rt, nil, "wake", "w1", "--wait", "10s")
	require.Equal(t, ExitRuntime, r.code, "a bridge that exits at start is exit 9: %s", r.err)
	require.Contains(t, r.out, "woken")
	require.Contains(t, r.err, `its bridge exited at start: no claude exe\x1b[31mcutable: pass --claude-bin`)
	require.NotContains(t, r.err, "\x1b", "control characters are shown, never sent")
	require.NotContains(t, r.err, "not answering")

	r = c.runWith(context.Background(), rt, nil, "status", "w1")
	require.Equal(t, ExitUnhealthy, r.code)
	require.Contains(t, r.out, `Exited: no claude exe\x1b[31mcutable: pass --claude-bin`)

	r = c.runWith(context.Background(), rt, nil, "status", "-o", "json", "w1")
	require.Contains(t, r.out, `"reason": "Exited: no claude exe\\x1b[31mcutable: pass --claude-bin, set $SPORECTL_CLAUDE_BIN, or use --agent echo"`)
	require.Contains(t, r.out, `"message": "no claude exe\\x1b[31mcutable`)

	r = c.runWith(context.Background(), rt, nil, "wake", "w1")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.out, "woken")
	require.Contains(t, r.err, "warning: the bridge of w1 had exited: no claude exe")
}

// TestWakeWaitSlowBridgeStaysUnhealthy: a bridge that runs but does not
// answer in time is still exit 3.
func TestWakeWaitSlowBridgeStaysUnhealthy(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1", "--wake")
	c.rt.BridgeOf("w1").SetUp(false)
	r := c.run("", "wake", "w1", "--wait", "500ms")
	require.Equal(t, ExitUnhealthy, r.code, r.err)
	require.Contains(t, r.err, "bridges not answering")
}

func TestLogsCommand(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1")
	rt := exitsAtStart{Runtime: c.rt, logs: "one\n\x1b]0;pwned\x07two\nno newline"}

	r := c.runWith(context.Background(), rt, nil, "logs", "w1")
	require.Equal(t, 0, r.code, r.err)
	require.Equal(t, "one\n\\x1b]0;pwned\\x07two\nno newline", r.out, "control characters made visible, lines kept")

	r = c.runWith(context.Background(), rt, nil, "logs", "ghost")
	require.Equal(t, ExitNotFound, r.code, r.err)
	r = c.runWith(context.Background(), rt, nil, "logs", "w1", "--tail", "-2")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "--tail")
	r = c.runWith(context.Background(), rt, nil, "logs")
	require.Equal(t, ExitUsage, r.code)

	// Ctrl-C ends a followed log quietly.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	go func() { <-ctx.Done(); stop(context.Canceled) }()
	r = c.runWith(ctx, cancelOnDeadline{rt}, nil, "logs", "w1", "-f")
	require.Equal(t, 0, r.code, r.err)
	require.Empty(t, r.err)
	require.Contains(t, r.out, "one\n")
}

// cancelOnDeadline turns the deadline of the test's context into the
// cancellation Ctrl-C is.
type cancelOnDeadline struct{ exitsAtStart }

func (c cancelOnDeadline) Logs(ctx context.Context, id string, opt reconcile.LogOptions, w io.Writer) error {
	err := c.exitsAtStart.Logs(ctx, id, opt, w)
	if err != nil && ctx.Err() != nil {
		return context.Canceled
	}
	return err
}

// TestInitWarnsWhenClaudeIsMissing: init with the claude agent warns,
// exit 0, when the bridges will find no claude the way they look for it.
func TestInitWarnsWhenClaudeIsMissing(t *testing.T) {
	withClaude := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withClaude, "claude"), []byte("#!/bin/sh\n"), 0o755))
	notExec := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notExec, "claude"), []byte("#!/bin/sh\n"), 0o644))
	cases := []struct {
		name string
		args []string
		env  map[string]string
		warn bool
	}{
		{"none anywhere", []string{"init"}, map[string]string{"PATH": t.TempDir()}, true},
		{"not executable", []string{"init"}, map[string]string{"PATH": notExec}, true},
		{"on PATH", []string{"init"}, map[string]string{"PATH": withClaude}, false},
		{"named by the environment", []string{"init"}, map[string]string{sporeenv.ClaudeBin: filepath.Join(withClaude, "claude")}, false},
		{"named by the environment, not there", []string{"init"}, map[string]string{sporeenv.ClaudeBin: "/opt/nowhere/claude"}, true},
		{"named by the environment, not executable", []string{"init"}, map[string]string{sporeenv.ClaudeBin: filepath.Join(notExec, "claude")}, true},
		{"echo agent", []string{"init", "--agent", "echo"}, nil, false},
		{"kube: the image has it", []string{"init", "--runtime", "kube", "--image", "example.com/spore:1"}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeColony{t: t, store: filepath.Join(t.TempDir(), "store"), rt: reconciletest.New(), now: testNow}
			r := c.runWith(context.Background(), c.rt, tc.env, tc.args...)
			require.Equal(t, 0, r.code, r.err)
			if tc.warn {
				if named := tc.env[sporeenv.ClaudeBin]; named != "" {
					// Said as the bridge will say it when it stops.
					require.Contains(t, r.err, "warning: the agent is claude, but claude: ")
					require.Contains(t, r.err, named)
					require.Contains(t, r.err, " (named by $SPORECTL_CLAUDE_BIN): spores will not start")
				} else {
					require.Contains(t, r.err, "warning: the agent is claude, but no claude executable")
				}
				require.Contains(t, r.err, "--agent echo")
			} else {
				require.NotContains(t, r.err, "warning")
			}
		})
	}
}
