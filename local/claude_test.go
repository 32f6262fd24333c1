package local

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/reconcile"
)

// TestRealClaudeTurnAndStop wakes a spore running the real Claude Code
// against a fake model, has it finish a turn that writes a file in its
// home, then stops it in the middle of a slow turn: the bridge and every
// Claude Code process must be gone, the home and its file kept.
func TestRealClaudeTurnAndStop(t *testing.T) {
	bin := fakeapi.ClaudeBin(t)
	ctx := context.Background()
	api := fakeapi.New()
	srv := api.Start()
	t.Cleanup(srv.Close)
	r := newRuntime(t, "claude", append(fakeapi.ClaudeEnv(srv.URL), "SPORECTL_CLAUDE_BIN="+bin)...)
	t.Cleanup(func() { _ = r.Delete(ctx, "claude-1", true) })
	notes := r.home("claude-1") + "/notes.txt"
	api.Script(
		fakeapi.Rule{Match: "write the notes", Steps: []fakeapi.Reply{fakeapi.Write(notes, "from the fake model\n"), fakeapi.Text("wrote notes")}},
		fakeapi.Rule{Match: "think slowly", Steps: []fakeapi.Reply{fakeapi.Slow(5*time.Minute, "too late")}},
	)
	// What the pass hands the start (mycelia.Identity in the CLI's pass).
	identity := "You are spore claude-1, a spore, in colony default.\n\nCommands you may run:\n- `mycologist ask \"…\"`\n"
	require.NoError(t, r.Start(ctx, spore("claude-1"), reconcile.Launch{Identity: identity, Creds: creds}))
	waitReady(t, r, "claude-1")
	ep, err := r.Bridge(ctx, "claude-1")
	require.NoError(t, err)
	c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
	require.NoError(t, err)

	_, err = c.Prompt(ctx, bridge.PromptRequest{ID: "p1", From: "user:test", Text: "write the notes"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ps, err := c.PromptState(ctx, "p1")
		return err == nil && ps.State == "done"
	}, 60*time.Second, 100*time.Millisecond, "the turn should finish")
	// Claude Code was told who it is and which commands it may use.
	var told bool
	for _, req := range api.Requests() {
		if sys := req.SystemText(); strings.Contains(sys, strings.TrimSpace(identity)) {
			told = true
		}
	}
	require.True(t, told, "the model never received the spore's identity in its system prompt")
	b, err := os.ReadFile(notes)
	require.NoError(t, err, "Claude Code ran the Write tool in the home")
	require.Equal(t, "from the fake model\n", string(b))

	_, err = c.Prompt(ctx, bridge.PromptRequest{ID: "p2", From: "user:test", Text: "think slowly"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.State == bridge.StateWorking && st.AgentPID > 0
	}, 30*time.Second, 50*time.Millisecond)
	require.GreaterOrEqual(t, len(marked("claude-1")), 2, "bridge and Claude Code run")

	require.NoError(t, r.Stop(ctx, "claude-1"))
	require.Eventually(t, func() bool { return len(marked("claude-1")) == 0 }, 10*time.Second, 20*time.Millisecond,
		"processes left after stop: %v", marked("claude-1"))
	require.FileExists(t, notes, "the home survives stop")
}
