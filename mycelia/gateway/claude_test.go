package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestClaudeThroughTheGateway: the real Claude Code, given only a
// spore's model key and the gateway's URL (as sporectl starts an agent),
// answers a prompt with the fake API behind the gateway; every call it
// made was passed (none refused as unknown), and its usage counted.
func TestClaudeThroughTheGateway(t *testing.T) {
	bin := fakeapi.ClaudeBin(t)
	w := newWorld(t, state.Settings{})
	w.spore("w1")
	home := t.TempDir()
	// A turn of two calls: a tool, then the text.
	w.up.fake.Script(fakeapi.Rule{Match: "say hi", Steps: []fakeapi.Reply{fakeapi.Write(filepath.Join(home, "note.txt"), "tool ran"), fakeapi.Text("hi from the fake")}})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "say hi", "--output-format", "text", "--permission-mode", "acceptEdits")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + w.srv.URL + "/model", "ANTHROPIC_API_KEY=" + w.key("w1"),
		"DISABLE_AUTOUPDATER=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "claude -p: %s", out)
	require.Contains(t, string(out), "hi from the fake")
	note, err := os.ReadFile(filepath.Join(home, "note.txt"))
	require.NoError(t, err, "the tool of the turn's first call ran")
	require.Equal(t, "tool ran", string(note))
	w.noSecretIn("claude's output", string(out))

	w.up.mu.Lock()
	paths := append([]string(nil), w.up.paths...)
	w.up.mu.Unlock()
	t.Logf("claude's calls that reached the upstream: %q", paths)
	w.metrics.mu.Lock()
	t.Logf("the gateway's answers: %v", w.metrics.requests)
	for k := range w.metrics.requests {
		require.NotContains(t, k, "Not Found", "claude made a call the gateway does not pass: %v", w.metrics.requests)
	}
	w.metrics.mu.Unlock()
	u := w.counted("w1")
	require.Positive(t, u.InputTokens, "claude's calls were counted")
	require.Positive(t, u.OutputTokens)
	require.Positive(t, u.CostMicros)
	require.GreaterOrEqual(t, len(statetest.Spore(t, w.store.Store, "w1").ModelCalls), 2, "both calls of the turn counted")
	for _, h := range w.up.headers {
		require.Equal(t, theKey, h.Get("X-Api-Key"), "the upstream got the real key")
		require.NotContains(t, h.Get("Authorization")+h.Get("X-Api-Key"), w.tokens["w1"], "the spore's token never goes upstream")
	}
}
