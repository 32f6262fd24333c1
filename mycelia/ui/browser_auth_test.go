package ui

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	bridgeagent "github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// echoRuntime is the fake runtime with one spore, echoID, served by a
// real bridge running the echo agent; the pass reaches it over HTTP with
// the real client.
type echoRuntime struct {
	*reconciletest.Runtime
	ep reconcile.BridgeEndpoint
}

const echoID = "echo"

func (r *echoRuntime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	if id == echoID {
		return r.ep, nil
	}
	return r.Runtime.Bridge(ctx, id)
}

func (r *echoRuntime) dial(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
	if strings.HasPrefix(ep.BaseURL, "fake://") {
		return r.Runtime.Dial(ep)
	}
	return reconcile.DialHTTP(ep)
}

// startEcho starts a real bridge (bridge/server with the echo agent) and
// returns its endpoint; it stops with the test.
func startEcho(t *testing.T) reconcile.BridgeEndpoint {
	t.Helper()
	const token = "sbt_browser_test_bridge_token"
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, server.Config{Home: t.TempDir(), Token: token, Agent: bridgeagent.Echo{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.RunAgent(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		ts.Close()
		require.NoError(t, srv.Close())
	})
	return reconcile.BridgeEndpoint{BaseURL: ts.URL, Token: token, Client: ts.Client()}
}

// reconcileLoop runs a read-only pass over and over, as a cron
// `sporectl reconcile` (or another serve) would: an echo's answer reaches
// the store, and from there the page, only when a pass ingests it.
func reconcileLoop(t *testing.T, ps *reconcile.Pass) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := ps.Run(ctx, reconcile.Options{}); err != nil && ctx.Err() == nil {
				t.Logf("reconcile pass: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// conversation is the text of every line of the open spore page.
const conversationJS = `Array.from(document.querySelectorAll("#conv li[data-seq]")).map(function (li) { return li.textContent; })`

// TestLoginAndPromptInABrowser drives, in a real headless Chromium, a
// page with an operator token configured: the redirect to the login page,
// a wrong token, the login, the fleet, a spore served by a real echo
// bridge, and a prompt typed into its box whose line and the agent's
// answer appear in the conversation without a reload.
func TestLoginAndPromptInABrowser(t *testing.T) {
	f := newFixture(t)
	f.colony()
	rt := &echoRuntime{Runtime: f.rt, ep: startEcho(t)}
	ps := reconciletest.NewPass(t, f.st, reconciletest.WithRuntime(rt), reconciletest.WithDial(rt.dial), reconciletest.At(t0.Add(time.Hour)))
	f.h.Pass = ps
	f.add(state.Spore{Wish: state.Wish{ID: echoID, Colony: "lab", Rank: state.RankSpore}}, true, lifecycle(0, "created", ""))
	logs := f.captureLog()
	token := f.operator("alice")
	reconcileLoop(t, ps)
	b := newBrowser(t)

	// Any page sends a browser without a session to the login page.
	b.do(chromedp.Navigate(f.ts.URL+"/ui/spores/"+echoID), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, f.ts.URL+"/ui/login?next=%2Fui%2Fspores%2Fecho", run(b, chromedp.Location()))
	b.requireQuiet()
	b.screenshot("login")

	// A wrong token: the page says so, no session.
	resp, err := chromedp.RunResponse(b.ctx, chromedp.SendKeys(chromedp.ID("token"), "spo_wrong"), chromedp.Click(chromedp.CSS(`form.login button`), chromedp.NodeVisible))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusUnauthorized, resp.Status)
	require.Contains(t, run(b, chromedp.Text(chromedp.ID("login-error"))), "not a valid operator token")

	// The right one: back to the page asked for, logged in.
	resp, err = chromedp.RunResponse(b.ctx, chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS(`form.login button`), chromedp.NodeVisible))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, resp.Status)
	require.Equal(t, f.ts.URL+"/ui/spores/"+echoID, run(b, chromedp.Location()))
	require.Empty(t, run(b, chromedp.Evaluate[string](`document.cookie`)), "the session cookie is HttpOnly")

	// The fleet shows, and one click opens the echo spore.
	b.do(chromedp.Navigate(f.ts.URL+"/ui/"), chromedp.WaitVisible(chromedp.ID("strip")))
	ids := run(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("td.id a")).map(function (a) { return a.textContent; })`))
	require.Contains(t, ids, echoID)
	require.Contains(t, ids, "lab-a")
	b.requireQuiet()
	b.open(`a[href="/ui/spores/` + echoID + `"]`)
	require.Equal(t, echoID, run(b, chromedp.Text(chromedp.CSS("h1"))))
	require.Contains(t, run(b, chromedp.Text(chromedp.CSS("form.prompt label"))), "user:alice")

	// The prompt: typed, sent, and shown with the answer, same document.
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(15*time.Second)))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	const said = "hello from the page <b>bold</b>"
	b.do(chromedp.SendKeys(chromedp.ID("prompt-text"), said), chromedp.Click(chromedp.CSS(`form.prompt button`), chromedp.NodeVisible))
	b.do(chromedp.Poll[chromedp.Void](`(function () { var t = `+conversationJS+`.join("\n"); return t.indexOf("echo: hello from the page") >= 0; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.True(t, run(b, chromedp.Evaluate[bool](`window.__sameDocument === true`)), "the page reloaded")
	conv := run(b, chromedp.Evaluate[[]string](conversationJS))
	var prompted, answered int
	for _, l := range conv {
		if strings.Contains(l, "[user:alice]") && strings.Contains(l, said) {
			prompted++
		}
		if strings.Contains(l, "echo: "+said) {
			answered++
		}
	}
	require.Equal(t, 1, prompted, "the prompt, once, with its sender: %q", conv)
	require.GreaterOrEqual(t, answered, 1, "the echo's answer: %q", conv)
	require.Equal(t, "sent", run(b, chromedp.Text(chromedp.ID("prompt-status"))))
	require.Empty(t, run(b, chromedp.Evaluate[string](`document.getElementById("prompt-text").value`)))
	require.Zero(t, run(b, chromedp.Evaluate[int](`document.querySelectorAll("#conv b").length`)), "the prompt's markup stayed text")
	b.requireQuiet()
	b.screenshot("spore-prompt")

	// Exactly once in the store, delivered.
	require.Len(t, f.prompts(echoID, 0), 1)
	require.Empty(t, f.written(echoID).outbox)
	require.NotContains(t, logs.String(), token)

	// Over its budget: the box says so; unticked, the prompt is queued
	// (409, the text kept in the box); ticked, it is delivered and
	// answered, and the first copy still waits for the budget.
	f.spend(echoID, 24, state.Budget{TokensPerDay: 20})
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("form.prompt .over")))
	require.Regexp(t, `^over budget: \d+/20 tokens today$`, run(b, chromedp.Text(chromedp.CSS("form.prompt .over .spend"))))
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(15*time.Second)))
	const over = "one more, over budget"
	b.do(chromedp.SendKeys(chromedp.ID("prompt-text"), over), chromedp.Click(chromedp.CSS(`form.prompt button`), chromedp.NodeVisible))
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById("prompt-status").textContent.indexOf("409: ") === 0`, chromedp.WithPollingTimeout(15*time.Second)))
	require.Contains(t, run(b, chromedp.Text(chromedp.ID("prompt-status"))), `tick "deliver even though over budget"`)
	require.Equal(t, over, run(b, chromedp.Evaluate[string](`document.getElementById("prompt-text").value`)))
	b.do(chromedp.Click(chromedp.CSS(`input[name="over_budget"]`), chromedp.NodeVisible), chromedp.Click(chromedp.CSS(`form.prompt button`), chromedp.NodeVisible))
	b.do(chromedp.Poll[chromedp.Void](`(function () { var t = `+conversationJS+`.join("\n"); return t.indexOf("echo: `+over+`") >= 0; })()`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.Equal(t, "sent", run(b, chromedp.Text(chromedp.ID("prompt-status"))))
	b.requireQuiet()
	b.screenshot("spore-over-budget")
	require.Len(t, f.prompts(echoID, 0), 3)
	queued := f.written(echoID).outbox
	require.Len(t, queued, 1, "the unticked copy waits")
	require.Equal(t, over, queued[0].Text)
	require.False(t, queued[0].OverBudget)

	// The header's button logs out: back to the login page, and the
	// fleet asks for a login again.
	require.Equal(t, "alice", run(b, chromedp.Text(chromedp.CSS("header form.logout .as"))))
	b.do(chromedp.Click(chromedp.CSS("header form.logout button"), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, f.ts.URL+"/ui/login", run(b, chromedp.Location()))
	b.do(chromedp.Navigate(f.ts.URL+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
	require.Contains(t, run(b, chromedp.Location()), "/ui/login?next=")
	b.requireQuiet()
}
