package main

// The recovery rows that need the real Claude Code (against the fake
// Messages API): Claude Code killed mid-turn, and a whole spore killed
// mid-turn, both shown to carry on in the same Claude session.

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

// retryNote is what the bridge puts before a prompt whose turn died, so
// the fake can answer the retry quickly while the first attempt hangs.
const retryNote = "stopped before finishing this prompt"

// claudeRig is a rig whose spores run the real Claude Code against api,
// reached directly (the model gateway off): the rows test recovery, not
// the gateway, and their spores take the fake's URL from the rig's
// environment.
func claudeRig(t *testing.T, api *fakeapi.Server) *rig {
	t.Helper()
	bin := fakeapi.ClaudeBin(t)
	srv := api.Start()
	t.Cleanup(srv.Close)
	env := append(fakeapi.ClaudeEnv(srv.URL), "SPORECTL_CLAUDE_BIN="+bin)
	return newRig(t, env, append([]string{"--agent", "claude", "--model-gateway", "off"}, recoveryPolicy...)...)
}

// waitTurnInFlight waits until the bridge runs a turn whose request the
// fake holds (it is slow), and returns the bridge's status then.
func (r *rig) waitTurnInFlight(id string, api *fakeapi.Server, match string) bridge.Status {
	r.t.Helper()
	var st bridge.Status
	require.Eventually(r.t, func() bool {
		st = r.bridgeStatus(id)
		_, asked := api.LastRequestFor(match)
		return st.State == bridge.StateWorking && st.AgentPID > 0 && asked
	}, 60*time.Second, 50*time.Millisecond, "the turn %q never reached the model", match)
	return st
}

// sessionsOf lists the session ids of the spore's Claude init lines and
// bridge_started lines, as ingested into the store.
func sessionsOf(t *testing.T, evs []state.Event) (inits, bridges []string) {
	for _, e := range evs {
		l := parseLine(t, e.Line)
		switch {
		case l.Type == "system" && l.Subtype == "init":
			inits = append(inits, l.Session)
		case l.Type == "bridge" && l.Subtype == "bridge_started":
			bridges = append(bridges, l.Session)
		}
	}
	return inits, bridges
}

func turnAttempts(t *testing.T, evs []state.Event, promptID string) []int {
	var out []int
	for _, e := range evs {
		if l := parseLine(t, e.Line); l.Type == "bridge" && l.Subtype == "turn_started" && l.PromptID == promptID {
			out = append(out, l.Attempt)
		}
	}
	return out
}

// TestRecoveryClaudeCodeKilledMidTurn — row "Claude Code mid-turn": the
// agent process (agent_pid from the bridge's status, while a slow turn is
// at the model) is SIGKILLed. The bridge notices and runs the prompt again
// on the same session (the retried request carries the earlier turn's
// history); sporectl never sees the spore Dead, its bridge never stopped;
// the store keeps every numbered line once, the cut-off attempt's included.
func TestRecoveryClaudeCodeKilledMidTurn(t *testing.T) {
	api := fakeapi.New()
	api.Script(
		fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello from the fake model")}},
		fakeapi.Rule{Match: "think slowly", Steps: []fakeapi.Reply{fakeapi.Slow(5*time.Minute, "too late")}},
		fakeapi.Rule{Match: retryNote, Steps: []fakeapi.Reply{fakeapi.Text("carried on after the agent died")}},
	)
	r := claudeRig(t, api)
	id := "rec-agent"
	r.wake(id)
	files := map[string]string{"work/notes.txt": "written before Claude Code died\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	hello, st := r.prompt(id, "say hello")
	require.Equal(t, "delivered", st)
	r.waitIdle(id, 90*time.Second)
	before := r.bridgeStatus(id)
	require.NotEmpty(t, before.SessionID)
	bridgePIDBefore := r.runFile(id).PID

	slow, st := r.prompt(id, "think slowly")
	require.Equal(t, "delivered", st)
	inFlight := r.waitTurnInFlight(id, api, "think slowly")
	require.NoError(t, syscall.Kill(inFlight.AgentPID, syscall.SIGKILL))
	waitGone(t, inFlight.AgentPID)

	// The bridge brings it back; sporectl sees a live spore throughout
	// (Suspect while the bridge backs off, then Healthy), never Dead.
	deadline := time.Now().Add(90 * time.Second)
	for {
		s, _ := r.status(id)
		r.requireTruthful(id, s)
		require.NotEqual(t, "Dead", s.Effective, "the bridge lives: %+v", s)
		bs := r.bridgeStatus(id)
		if s.Effective == "Healthy" && bs.State == bridge.StateIdle && bs.Queue == 0 {
			require.Equal(t, 1, bs.AgentRestarts, "the bridge restarted Claude Code once")
			require.Equal(t, before.SessionID, bs.SessionID, "the same session")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn was not carried on within 90s: %+v, bridge %+v", s, bs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, bridgePIDBefore, r.runFile(id).PID, "the bridge itself was not restarted")
	req, ok := api.LastRequestFor(retryNote)
	require.True(t, ok, "the retry reached the model")
	require.True(t, req.Contains("say hello"), "the retried turn resumed the session with its history")

	r.settle(id, 60*time.Second)
	evs := r.events(id)
	require.Equal(t, []int{1, 2}, turnAttempts(t, evs, slow), "the cut-off prompt ran again, once")
	inits, bridges := sessionsOf(t, evs)
	require.GreaterOrEqual(t, len(inits), 3)
	for _, s := range append(inits, bridges...) {
		require.Equal(t, before.SessionID, s, "every turn on the same session")
	}
	require.Equal(t, 0, count(evs, state.KindLifecycle, "restart"), "sporectl restarted nothing")
	r.requireIntact(id, expect{files: files, retried: map[string]bool{slow: true}, prompts: []sent{
		{id: hello, text: "say hello", acked: true}, {id: slow, text: "think slowly", acked: true}}})
}

// TestRecoveryWholeSporeKilled — row "the whole spore (local tree
// killed)": while Claude Code is mid-turn, every process of the spore is
// SIGKILLed at once (kill -- -pgid). Status says Dead; reconcile starts a
// new tree on the same home, whose bridge runs the cut-off prompt again on
// the same Claude session (same session_id; the model sees the earlier
// turns); the files Claude and the test wrote in the home survived.
func TestRecoveryWholeSporeKilled(t *testing.T) {
	api := fakeapi.New()
	r := claudeRig(t, api)
	id := "rec-tree"
	notes := filepath.Join(r.home(id), "claude-notes.txt")
	api.Script(
		fakeapi.Rule{Match: "write the notes", Steps: []fakeapi.Reply{fakeapi.Write(notes, "from the fake model\n"), fakeapi.Text("wrote the notes")}},
		fakeapi.Rule{Match: "think slowly", Steps: []fakeapi.Reply{fakeapi.Slow(5*time.Minute, "too late")}},
		fakeapi.Rule{Match: retryNote, Steps: []fakeapi.Reply{fakeapi.Text("carried on after the spore died")}},
		fakeapi.Rule{Match: "what did you write", Steps: []fakeapi.Reply{fakeapi.Text("the notes")}},
	)
	r.wake(id)
	files := map[string]string{"work/mine.txt": "written before the spore died\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	write, st := r.prompt(id, "write the notes")
	require.Equal(t, "delivered", st)
	r.waitIdle(id, 90*time.Second)
	files["claude-notes.txt"] = "from the fake model\n"
	before := r.bridgeStatus(id)
	require.NotEmpty(t, before.SessionID)

	slow, st := r.prompt(id, "think slowly")
	require.Equal(t, "delivered", st)
	r.waitTurnInFlight(id, api, "think slowly")
	oldBridge := r.runFile(id).PID
	killed := r.killTree(id)
	require.GreaterOrEqual(t, len(killed), 2, "the bridge and Claude Code")

	r.requireDead(id)
	rep, code := r.reconcile()
	require.Equal(t, 0, code, "restarted and coming up needs nobody: %+v", rep)
	require.Equal(t, "Starting", rep.spore(t, id).Effective, "the table is the spore after the pass acted")
	require.True(t, rep.did(id, "restart"), "%+v", rep.Actions)
	r.waitHealthy(id, 60*time.Second)
	require.NotEqual(t, oldBridge, r.runFile(id).PID, "a new tree")
	after := r.waitIdle(id, 90*time.Second)
	require.Equal(t, before.SessionID, after.SessionID, "the same Claude session")
	req, ok := api.LastRequestFor(retryNote)
	require.True(t, ok, "the new bridge ran the cut-off prompt again")
	require.True(t, req.Contains("write the notes"), "on the same session: the model sees the earlier turn")

	again, st := r.prompt(id, "what did you write?")
	require.Equal(t, "delivered", st)
	r.settle(id, 90*time.Second)
	req, ok = api.LastRequestFor("what did you write")
	require.True(t, ok)
	require.True(t, req.Contains("write the notes"))

	evs := r.events(id)
	attempts := turnAttempts(t, evs, slow)
	require.Equal(t, 2, attempts[len(attempts)-1], "the cut-off prompt ran again on the new tree: %v", attempts)
	inits, bridges := sessionsOf(t, evs)
	require.Len(t, bridges, 2, "two bridges: before and after the kill")
	for _, s := range append(inits, bridges...) {
		require.Equal(t, before.SessionID, s, "every turn and bridge on the same session")
	}
	require.Equal(t, 1, count(evs, state.KindLifecycle, "restart"))
	r.requireIntact(id, expect{files: files, retried: map[string]bool{slow: true}, prompts: []sent{
		{id: write, text: "write the notes", acked: true}, {id: slow, text: "think slowly", acked: true},
		{id: again, text: "what did you write?", acked: true}}})
}
