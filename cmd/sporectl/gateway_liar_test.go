package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

// curlTheGateway is what a spore that hides its spending runs: a model
// call straight to the gateway with the credential its agent holds, which
// its agent's own report never includes.
const curlTheGateway = `curl -s "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" ` +
	`-H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' ` +
	`-d '{"model":"claude-fake-1","max_tokens":16,"messages":[{"role":"user","content":"curl spends it all"}]}'`

// TestGatewayStopsALiarMidTurn: a spore with a 5000-token budget whose
// turn is, by the fake's script, (1) a Bash tool call that calls the
// gateway itself with curl, answered with 6000 input tokens, (2) another
// tool call, (3) text. The curl call is counted, and the agent's own
// report does not have it; the turn's next model call, its follow-up after
// the curl, is refused at the gateway (403, over its budget): the fake
// never sees it, nor step 3's; the turn ends.
func TestGatewayStopsALiarMidTurn(t *testing.T) {
	api := fakeapi.New()
	api.Script(
		fakeapi.Rule{Match: "liar turn", Steps: []fakeapi.Reply{
			fakeapi.Bash(curlTheGateway), fakeapi.Bash("echo the second step"), fakeapi.Text("the third step")}},
		fakeapi.Rule{Match: "curl spends it all", Steps: []fakeapi.Reply{
			fakeapi.Text("spent behind the agent's back").Spending(fakeapi.Usage{Input: 6000, Output: 4})}},
	)
	g := newGatewayRig(t, api)
	id := "gw-liar"
	g.wake(id, "--budget-tokens", "5000")
	// The spore's own project settings let its agent run any command (the
	// bridge's acceptEdits would ask for curl, and nobody answers in -p).
	g.writeHome(id, ".claude/settings.json", `{"permissions":{"allow":["Bash"]}}`)

	g.prompt(id, "liar turn: run the command")
	g.waitIdle(id, 90*time.Second)

	answers := api.Answered()
	i := slices.IndexFunc(answers, func(a fakeapi.Answer) bool { return strings.Contains(a.Prompt, "curl spends it all") })
	require.GreaterOrEqual(t, i, 0, "the agent's curl reached the model through the gateway: %+v", answers)
	curl := answers[i]
	require.False(t, curl.Stream)
	require.Equal(t, gatewayKey, curl.APIKey, "with serve's key")
	for _, req := range api.Requests() {
		if p, step := req.Prompt(); strings.Contains(p, "liar turn") {
			require.Zero(t, step, "the fake saw a follow-up of the turn after the curl: the gateway let it through")
		}
	}

	rec := g.counted(id)
	k := slices.IndexFunc(rec.ModelCalls, func(c state.CountedCall) bool { return c.ID == curl.ID })
	require.GreaterOrEqual(t, k, 0, "the curl call is counted: %+v", rec.ModelCalls)
	require.Equal(t, int64(6000), rec.ModelCalls[k].InputTokens)
	require.Equal(t, tokens(sumOf(answers)), tokens(rec.CountedOn(time.Now())), "every call the fake answered is counted, and nothing else")
	counted := rec.CountedOn(time.Now()).Spend().Tokens
	require.GreaterOrEqual(t, counted, int64(5000), "over the budget")

	chat := g.ok("chat", id)
	require.Contains(t, chat, "API Error: 403 spore "+id+" is over its budget", "the agent was told why its call was refused:\n%s", chat)
	require.NotContains(t, chat, "the third step")
	g.ok("status", id) // ingests the agent's report
	sp, _ := g.record(id)
	reported := state.SpendOn(sp.Activity, time.Now()).Tokens
	require.Positive(t, reported, "the agent reported its turn")
	require.Less(t, reported, counted-5000, "the agent's report leaves the curl out: the gateway's count is what budgets see")

	t.Run("reconcile sleeps it by budget and holds the next prompt", func(t *testing.T) {
		res := g.run("reconcile", "-o", "json")
		require.Contains(t, []int{0, 3}, res.code, "reconcile: %s", res)
		var rep passReport
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep), "reconcile: %s", res)
		require.True(t, rep.did(id, "sleep"), "over budget on the gateway's count: %+v", rep.Actions)
		s := g.status(id)
		require.Equal(t, "Paused", s.Desired)
		require.Equal(t, "budget", s.SleptBy)
		require.Contains(t, s.Reason, "over budget (")
		require.Contains(t, s.Reason, "/5000 tokens today)")
		require.NotNil(t, s.Spend)
		require.Equal(t, counted, s.Spend.Tokens, "status's spend is the gateway's count")
		require.NotNil(t, s.ReportedSpend, "the agent's own report is shown beside it: %+v", s)
		require.Equal(t, reported, s.ReportedSpend.Tokens)
		require.Equal(t, fmt.Sprintf("%d/5000 tokens today", counted), s.OverBudget)
		held := g.run("prompt", id, "one more")
		require.Equal(t, 16, held.code, "%s", held)
		require.Contains(t, held.stderr, "over budget")
	})
	g.stopServe()
	g.requireNowhere(gatewayKey, id)
	g.requireTokenUnprinted(id)
}
