package local

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
)

// TestRealClaudeBehindTheGatewayPresentsTheSporesKey: the real Claude
// Code, in a spore started as the CLI starts it with the gateway on while
// the operator's environment holds a model key, sends its model calls to
// the gateway's URL (here the fake Messages API under /model, standing in
// for serve's gateway) with the spore's ID:TOKEN as its credential, and
// never the operator's key.
func TestRealClaudeBehindTheGatewayPresentsTheSporesKey(t *testing.T) {
	bin := fakeapi.ClaudeBin(t)
	ctx := context.Background()
	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello through the gateway")}})
	var mu sync.Mutex
	var keys, paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("x-api-key")+"|"+r.Header.Get("Authorization"))
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.StripPrefix(sporeenv.ModelPath, api).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	t.Setenv("ANTHROPIC_API_KEY", operatorKey)
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1") // the operator's endpoint: never asked
	t.Setenv(sporeenv.ClaudeBin, bin)
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("DISABLE_AUTOUPDATER", "1")
	r, err := New(Config{Root: t.TempDir(), Binary: sporectlBin, Agent: "claude", StopTimeout: 2 * time.Second,
		Env: InheritedEnv(os.Environ(), true), ModelURL: srv.URL + sporeenv.ModelPath})
	require.NoError(t, err)
	id := "claude-gw"
	t.Cleanup(func() { _ = r.Delete(ctx, id, true) })
	require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Identity: "You are " + id, Creds: creds}))
	waitReady(t, r, id)
	ep, err := r.Bridge(ctx, id)
	require.NoError(t, err)
	c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
	require.NoError(t, err)
	_, err = c.Prompt(ctx, bridge.PromptRequest{ID: "p1", From: "user:test", Text: "say hello"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ps, err := c.PromptState(ctx, "p1")
		return err == nil && ps.State == "done"
	}, 90*time.Second, 100*time.Millisecond, "the turn should finish through the gateway")
	_, asked := api.LastRequestFor("say hello")
	require.True(t, asked, "the prompt reached the model through the gateway's URL")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, keys)
	t.Logf("Claude Code called: %v", paths)
	for i, k := range keys {
		require.NotContains(t, k, operatorKey, "request %d to %s", i, paths[i])
		require.True(t, strings.HasPrefix(paths[i], sporeenv.ModelPath+"/"), "request %d under the gateway's path: %s", i, paths[i])
		require.Equal(t, id+":"+creds.APIToken+"|", k, "request %d to %s presents the spore's key as x-api-key", i, paths[i])
	}
}
