package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/testutil"
)

// prestartClaude is the real Claude Code with Prestart, against the fake
// Messages API; its log is kept in logs.
func prestartClaude(t *testing.T, logs *testutil.Buffer) (*Claude, *fakeapi.Server) {
	t.Helper()
	bin := fakeapi.ClaudeBin(t)
	api := fakeapi.New()
	srv := api.Start()
	t.Cleanup(srv.Close)
	c := &Claude{Bin: bin, Args: []string{"--permission-mode", "acceptEdits"}, Env: fakeapi.ClaudeEnv(srv.URL),
		Prestart: true, KillAfter: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	t.Cleanup(c.DropPrepared)
	return c, api
}

// runTurn starts t on c and returns its lines, decoded, once it ended.
func runTurn(t *testing.T, c *Claude, turn Turn) (int, []map[string]any) {
	t.Helper()
	p, err := c.Start(context.Background(), turn)
	require.NoError(t, err)
	var lines []map[string]any
	sc := bufio.NewScanner(p.Stdout())
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		lines = append(lines, m)
	}
	require.NoError(t, p.Wait())
	return p.PID(), lines
}

func types(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l["type"].(string))
	}
	return out
}

// gone: the process is not there any more, not even as a zombie (it was
// reaped).
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

func environ(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	require.NoError(t, err)
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
}

// TestPrestartedProcessRunsItsTurn: the process started before the
// prompt is the one that runs the turn, its lines are a turn's (init on
// the session, the reply, the result), and it holds no bridge token.
func TestPrestartedProcessRunsItsTurn(t *testing.T) {
	t.Setenv(sporeenv.BridgeToken, "sbt_secret_bridge_token")
	var logs testutil.Buffer
	c, api := prestartClaude(t, &logs)
	api.Script(fakeapi.Rule{Match: "first prompt", Steps: []fakeapi.Reply{fakeapi.Text("first reply")}},
		fakeapi.Rule{Match: "second prompt", Steps: []fakeapi.Reply{fakeapi.Text("second reply")}})
	turn := Turn{Home: t.TempDir(), SessionID: "6f1d7a52-3c1b-4b8e-9a55-0c2a7e4b9d10"}

	require.NoError(t, c.Prepare(context.Background(), turn))
	waiting := c.PreparedPID()
	require.NotZero(t, waiting)
	require.NotContains(t, strings.Join(environ(t, waiting), "\n"), "sbt_secret_bridge_token", "the bridge token is never an agent's")
	time.Sleep(500 * time.Millisecond) // it waits, and does not run a turn of its own
	require.False(t, exitedNow(waiting))
	require.Empty(t, api.Requests())

	turn.Prompt = "the first prompt"
	pid, lines := runTurn(t, c, turn)
	require.Equal(t, waiting, pid, "the turn ran on the waiting process")
	require.Equal(t, []string{"system", "assistant", "result"}, types(lines))
	require.Equal(t, "init", lines[0]["subtype"])
	require.Equal(t, turn.SessionID, lines[0]["session_id"])
	require.Equal(t, "first reply", lines[2]["result"])
	require.Zero(t, c.PreparedPID(), "a turn takes the waiting process")

	// The next turn resumes: prepared as such, it runs on its process.
	turn.Resume, turn.Prompt = true, ""
	require.NoError(t, c.Prepare(context.Background(), turn))
	waiting = c.PreparedPID()
	require.NoError(t, c.Prepare(context.Background(), turn), "asked again for the same turn")
	require.Equal(t, waiting, c.PreparedPID(), "the waiting process is kept")
	turn.Prompt = "the second prompt"
	pid, lines = runTurn(t, c, turn)
	require.Equal(t, waiting, pid)
	require.Equal(t, "second reply", lines[len(lines)-1]["result"])
	req, ok := api.LastRequestFor("second prompt")
	require.True(t, ok)
	require.True(t, req.Contains("the first prompt"), "it resumed the session")
	require.NotContains(t, logs.String(), "starting afresh")
}

// TestPrestartedProcessNotTheTurnsIsReplaced: a process started for
// another turn than the one that comes (the other session flag, another
// session, another home, a rotated key, a changed environment) is never
// handed the prompt: it is ended, and the turn runs, once, on a new
// process. What differed is logged by name, never by value.
func TestPrestartedProcessNotTheTurnsIsReplaced(t *testing.T) {
	var logs testutil.Buffer
	c, api := prestartClaude(t, &logs)
	home := t.TempDir()
	session := Turn{Home: home, SessionID: "0b7e3d2a-8c4f-4e61-a1d9-5f3c2b7a6e80", Prompt: "hello"}
	_, lines := runTurn(t, c, session) // the session exists: the turns below resume it
	require.Equal(t, "ok", lines[len(lines)-1]["result"])
	session.Resume, session.Prompt = true, ""
	apiURL := strings.TrimPrefix(c.Env[0], "ANTHROPIC_BASE_URL=")
	other := session
	other.SessionID = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	created := session
	created.Resume = false
	elsewhere := session
	elsewhere.Home = t.TempDir()

	cases := []struct {
		name     string
		prepared Turn
		before   func() // c as it is when the process is prepared
		change   func() // what changes before the turn comes
		differs  string
	}{
		{name: "created where the turn resumes", prepared: created, differs: "arguments"},
		{name: "another session", prepared: other, differs: "arguments"},
		{name: "another home", prepared: elsewhere, differs: "home"},
		{name: "the gateway's key rotated", prepared: session,
			before:  func() { c.Gateway = &Gateway{URL: apiURL, Key: "s-1:token-before"} },
			change:  func() { c.Gateway = &Gateway{URL: apiURL, Key: "s-1:token-after"} },
			differs: "environment"},
		{name: "the bridge's environment changed", prepared: session,
			before:  func() { c.Gateway = nil; t.Setenv("SPORECTL_TEST_SOMETHING", "before") },
			change:  func() { t.Setenv("SPORECTL_TEST_SOMETHING", "after") },
			differs: "environment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mark := len(logs.String())
			if tc.before != nil {
				tc.before()
			}
			require.NoError(t, c.Prepare(context.Background(), tc.prepared))
			waiting := c.PreparedPID()
			require.NotZero(t, waiting)
			if tc.change != nil {
				tc.change()
			}
			turn := session
			turn.Prompt = "prompt for " + tc.name
			pid, lines := runTurn(t, c, turn)
			require.NotEqual(t, waiting, pid, "the turn did not run on a process started for another")
			require.Equal(t, turn.SessionID, lines[0]["session_id"])
			require.Equal(t, "ok", lines[len(lines)-1]["result"])
			require.True(t, gone(waiting), "the stale process was ended and reaped")
			require.Equal(t, 1, requestsFor(api, turn.Prompt), "the prompt went to the model once")
			require.Contains(t, logs.String()[mark:], "differs="+tc.differs)
			require.NotContains(t, logs.String(), "token-", "no key in the log")
		})
	}
}

// requestsFor counts the model requests whose prompt is text.
func requestsFor(api *fakeapi.Server, text string) int {
	n := 0
	for _, r := range api.Requests() {
		if p, step := r.Prompt(); strings.Contains(p, text) && step == 0 {
			n++
		}
	}
	return n
}

// TestPrestartedProcessThatDiedIsReplaced: a waiting process that exits
// (killed here) is not handed a prompt: the turn runs on a new one, with
// no death counted. One that exits after waiting long enough is replaced
// at once; one that exits sooner is not (no restart loop).
func TestPrestartedProcessThatDiedIsReplaced(t *testing.T) {
	var logs testutil.Buffer
	c, api := prestartClaude(t, &logs)
	turn := Turn{Home: t.TempDir(), SessionID: "2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6"}
	prepareAndKill := func() int {
		t.Helper()
		require.NoError(t, c.Prepare(context.Background(), turn))
		pid := c.PreparedPID()
		require.NotZero(t, pid)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		require.Eventually(t, func() bool { return exitedNow(pid) }, 10*time.Second, 5*time.Millisecond)
		return pid
	}

	relaunchAfter := func(d time.Duration) { // under c.mu, as watch reads it
		c.mu.Lock()
		defer c.mu.Unlock()
		idleRelaunchAfter = d
	}
	defer relaunchAfter(idleRelaunchAfter)
	relaunchAfter(time.Hour)
	dead := prepareAndKill()
	turn.Prompt = "after a death"
	pid, lines := runTurn(t, c, turn)
	require.NotEqual(t, dead, pid)
	require.Equal(t, "ok", lines[len(lines)-1]["result"])
	require.Equal(t, 1, requestsFor(api, "after a death"))
	require.True(t, gone(dead), "reaped")
	require.Contains(t, logs.String(), "exited")

	turn.Resume, turn.Prompt = true, ""
	dead = prepareAndKill()
	require.Eventually(t, func() bool { return c.PreparedPID() == 0 && gone(dead) }, 10*time.Second, 10*time.Millisecond,
		"noticed and reaped while waiting; not replaced, it had not waited long")

	relaunchAfter(0)
	dead = prepareAndKill()
	require.Eventually(t, func() bool { p := c.PreparedPID(); return p != 0 && p != dead }, 10*time.Second, 10*time.Millisecond,
		"replaced")
	require.True(t, gone(dead))
	replacement := c.PreparedPID()
	turn.Prompt = "on the replacement"
	pid, lines = runTurn(t, c, turn)
	require.Equal(t, replacement, pid)
	require.Equal(t, "ok", lines[len(lines)-1]["result"])

	require.NoError(t, c.Prepare(context.Background(), turn))
	waiting := c.PreparedPID()
	c.DropPrepared()
	require.Zero(t, c.PreparedPID())
	require.True(t, gone(waiting), "dropped: killed and reaped")
}

// TestPromptNotTakenGoesToANewProcessOnce: a waiting process that cannot
// take the prompt (its stdin closed: the write fails with EPIPE) is ended
// and the prompt goes, whole and once, to a new process.
func TestPromptNotTakenGoesToANewProcessOnce(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	// The first process closes its stdin and waits; the next ones print
	// what they are given.
	bin := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(bin, []byte(`#!/bin/sh
n=$(cat "$COUNT" 2>/dev/null || echo 0)
echo $((n+1)) > "$COUNT"
if [ "$n" = 0 ]; then exec 0<&-; : > "$COUNT.closed"; exec sleep 60; fi
exec cat
`), 0o755))
	var logs testutil.Buffer
	c := &Claude{Bin: bin, Env: []string{"COUNT=" + count}, Prestart: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	t.Cleanup(c.DropPrepared)
	turn := Turn{Home: dir, SessionID: "S"}
	require.NoError(t, c.Prepare(context.Background(), turn))
	waiting := c.PreparedPID()
	require.Eventually(t, func() bool {
		// The shell closed its stdin (it keeps no copy: exec with no
		// command makes a redirection its own) before it made the file.
		_, err := os.Stat(count + ".closed")
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "the waiting process closed its stdin")

	turn.Prompt = "a prompt\nwith two lines and \"quotes\""
	p, err := c.Start(context.Background(), turn)
	require.NoError(t, err)
	require.NotEqual(t, waiting, p.PID())
	var out bytes.Buffer
	_, err = out.ReadFrom(p.Stdout())
	require.NoError(t, err)
	require.NoError(t, p.Wait())
	require.Equal(t, string(userMessage(turn.Prompt)), out.String(), "the new process got the prompt, once, whole")
	var msg struct {
		Type    string
		Message struct{ Role, Content string }
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &msg))
	require.Equal(t, "user", msg.Type)
	require.Equal(t, turn.Prompt, msg.Message.Content)
	require.True(t, gone(waiting))
	require.Contains(t, logs.String(), "did not take the prompt")
	require.Contains(t, logs.String(), "broken pipe")
}

// TestSpecDiffersNamesNoValue: what a stale process is logged with.
func TestSpecDiffersNamesNoValue(t *testing.T) {
	a := spec{bin: "claude", dir: "/h", args: []string{"-p"}, env: []string{"ANTHROPIC_API_KEY=s:1"}}
	b := a
	require.Empty(t, a.differs(b))
	require.True(t, a.equal(b))
	b.env = []string{"ANTHROPIC_API_KEY=s:2"}
	require.Equal(t, "environment", a.differs(b))
	require.False(t, a.equal(b))
	b = a
	b.args = []string{"-p", "--resume"}
	require.Equal(t, "arguments", a.differs(b))
}
