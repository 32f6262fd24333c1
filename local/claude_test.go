package local

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
)

// claudeBin is the real Claude Code; missing, the test fails in CI and
// skips elsewhere.
func claudeBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SPORECTL_CLAUDE_BIN")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but SPORECTL_CLAUDE_BIN is not: export SPORECTL_CLAUDE_BIN=$(bash .ci/claude-code.sh)")
		}
		t.Skip("SPORECTL_CLAUDE_BIN is not set (export SPORECTL_CLAUDE_BIN=$(bash .ci/claude-code.sh))")
	}
	return bin
}

// TestRealClaudeTurnAndStop wakes a spore running the real Claude Code
// against a fake model, has it finish a turn that writes a file in its
// home, then stops it in the middle of a slow turn: the bridge and every
// Claude Code process must be gone, the home and its file kept.
func TestRealClaudeTurnAndStop(t *testing.T) {
	bin := claudeBin(t)
	ctx := context.Background()
	api := fakeapi.New()
	srv := api.Start()
	t.Cleanup(srv.Close)
	r := newRuntime(t, "claude",
		"SPORECTL_CLAUDE_BIN="+bin,
		"ANTHROPIC_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=sk-fake-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	)
	t.Cleanup(func() { _ = r.Delete(ctx, "claude-1", true) })
	notes := r.home("claude-1") + "/notes.txt"
	api.Script(
		fakeapi.Rule{Match: "write the notes", Steps: []fakeapi.Reply{fakeapi.Write(notes, "from the fake model\n"), fakeapi.Text("wrote notes")}},
		fakeapi.Rule{Match: "think slowly", Steps: []fakeapi.Reply{fakeapi.Slow(5*time.Minute, "too late")}},
	)
	require.NoError(t, r.Start(ctx, spore("claude-1"), creds))
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
