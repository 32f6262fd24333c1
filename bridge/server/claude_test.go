package server

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/bridge/streamjson"
)

// startClaudeBridge runs an in-process bridge around the real Claude Code
// talking to a fake Messages API, each next turn's process prestarted as
// `sporectl bridge` does by default.
func startClaudeBridge(t *testing.T, api *fakeapi.Server) *harness {
	return startClaudeBridgeWith(t, api, true)
}

func startClaudeBridgeWith(t *testing.T, api *fakeapi.Server, prestart bool) *harness {
	bin := fakeapi.ClaudeBin(t)
	apiSrv := api.Start()
	t.Cleanup(apiSrv.Close)
	home := t.TempDir()
	ag := &recordingClaude{Claude: &agent.Claude{Bin: bin, Args: []string{"--permission-mode", "acceptEdits"}, Env: fakeapi.ClaudeEnv(apiSrv.URL),
		Logger: testLogger(t), KillAfter: 2 * time.Second, Prestart: prestart}}
	return startBridge(t, home, ag, func(c *Config) { c.BackoffBase = 100 * time.Millisecond })
}

func resultText(evs []bridge.Event) []string {
	var out []string
	for _, e := range evs {
		for _, ev := range streamjson.Parse(e.Line) {
			if ev.Kind == streamjson.KindResult {
				out = append(out, ev.Result.Text)
			}
		}
	}
	return out
}

// TestClaudeTurnsResumeToolsCompactBlocked: a conversation, the same
// whether each turn's Claude Code was started before its prompt (and
// handed it as a stream-json message) or for it (the prompt as text).
func TestClaudeTurnsResumeToolsCompactBlocked(t *testing.T) {
	t.Run("prestarted", func(t *testing.T) { claudeTurnsResumeToolsCompactBlocked(t, true) })
	t.Run("started for each prompt", func(t *testing.T) { claudeTurnsResumeToolsCompactBlocked(t, false) })
}

func claudeTurnsResumeToolsCompactBlocked(t *testing.T, prestart bool) {
	api := fakeapi.New()
	h := startClaudeBridgeWith(t, api, prestart)
	notes := filepath.Join(h.home, "notes.txt")
	api.Script(
		fakeapi.Rule{Match: "write the notes", Steps: []fakeapi.Reply{fakeapi.Write(notes, "hello from the fake model\n"), fakeapi.Text("wrote notes.txt")}},
		fakeapi.Rule{Match: "what did I ask", Steps: []fakeapi.Reply{fakeapi.Text("you asked for notes")}},
		fakeapi.Rule{Match: "fetch the page", Steps: []fakeapi.Reply{fakeapi.Bash("curl -s http://example.invalid/"), fakeapi.Text("could not")}},
	)
	ctx := context.Background()

	h.prompt("p1", "please write the notes")
	evs := h.until(0, 60*time.Second, hasType("result", "", 1))
	require.Equal(t, []string{"wrote notes.txt"}, resultText(evs))
	b, err := os.ReadFile(notes)
	require.NoError(t, err, "Claude Code ran the Write tool in the home")
	require.Equal(t, "hello from the fake model\n", string(b))

	st, err := h.client.Status(ctx)
	require.NoError(t, err)
	var sawInit, sawWrite bool
	for _, e := range evs {
		for _, ev := range streamjson.Parse(e.Line) {
			switch ev.Kind {
			case streamjson.KindInit:
				sawInit = true
				require.Equal(t, st.SessionID, ev.SessionID, "Claude runs on the bridge's pinned session")
			case streamjson.KindToolUse:
				sawWrite = true
				require.Equal(t, "Write", ev.ToolUse.Name)
				require.Equal(t, notes, ev.ToolUse.FilePath)
			}
		}
	}
	require.True(t, sawInit && sawWrite)

	h.prompt("p2", "what did I ask before?")
	evs = h.until(evs[len(evs)-1].Seq, 60*time.Second, hasType("result", "", 1))
	require.Equal(t, []string{"you asked for notes"}, resultText(evs))
	req, ok := api.LastRequestFor("what did I ask")
	require.True(t, ok)
	require.True(t, req.Contains("please write the notes"), "the second turn resumed the session with its history")

	h.prompt("p3", "fetch the page")
	evs = h.until(evs[len(evs)-1].Seq, 60*time.Second, hasType("result", "", 1))
	st = h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State != bridge.StateWorking })
	require.Equal(t, bridge.StateBlocked, st.State, "a refused permission leaves the spore waiting for a person")

	_, err = h.client.Compact(ctx)
	require.NoError(t, err)
	h.until(evs[len(evs)-1].Seq, 60*time.Second, hasType("system", "compact_boundary", 1))
	st = h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State != bridge.StateWorking })
	require.Equal(t, bridge.StateIdle, st.State, "a new turn clears blocked")
	require.Zero(t, st.AgentRestarts)
}

func TestClaudeKilledMidTurnIsRestarted(t *testing.T) {
	api := fakeapi.New()
	h := startClaudeBridge(t, api)
	api.Script(
		fakeapi.Rule{Match: "slow task", Steps: []fakeapi.Reply{fakeapi.Slow(3*time.Second, "finished slowly")}},
		fakeapi.Rule{Match: "what was the task", Steps: []fakeapi.Reply{fakeapi.Text("a slow one")}},
	)
	h.prompt("slow", "do the slow task")
	st := h.waitStatus(30*time.Second, func(s bridge.Status) bool {
		_, asked := api.LastRequestFor("slow task")
		return s.State == bridge.StateWorking && s.AgentPID > 0 && asked
	})
	require.NoError(t, syscall.Kill(st.AgentPID, syscall.SIGKILL))

	evs := h.until(0, 60*time.Second, hasType("result", "", 1))
	requireContiguous(t, evs, 1)
	require.Equal(t, []string{"finished slowly"}, resultText(evs), tail(evs))
	require.Equal(t, 1, countType(evs, "bridge", "agent_exited"))
	require.Equal(t, 2, countType(evs, "bridge", "turn_started"), "the same prompt ran again")
	st = h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle })
	require.Equal(t, 1, st.AgentRestarts)

	h.prompt("after", "what was the task?")
	more := h.until(evs[len(evs)-1].Seq, 60*time.Second, hasType("result", "", 1))
	require.Equal(t, []string{"a slow one"}, resultText(more))
	req, ok := api.LastRequestFor("what was the task")
	require.True(t, ok)
	require.True(t, req.Contains("do the slow task"), "the conversation went on in the same session")
	var sessions []string
	for _, e := range append(evs, more...) {
		if lineField(e, "subtype") == "init" {
			sessions = append(sessions, lineField(e, "session_id"))
		}
	}
	require.GreaterOrEqual(t, len(sessions), 2)
	for _, s := range sessions {
		require.Equal(t, st.SessionID, s)
	}
}
