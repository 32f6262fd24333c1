package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
)

// TestGatewayClaudeAnswersAndIsCounted: a spore's Claude Code, woken and
// prompted, answers through serve's gateway; the store counts exactly
// what the model's answers said they used (input, cache writes and reads,
// output: the fake's own account), and the spend status shows is that
// count (input + cache writes + output). serve's key reached the model on
// every call, and is in none of: the files of the store's directory (its
// rows, the spores' homes and run files), the environment or command line
// of any process of the spore (searched while its turn streams, and
// after), the output of any sporectl command run, serve's log. Nor is the
// spore's token in any output or log.
func TestGatewayClaudeAnswersAndIsCounted(t *testing.T) {
	const reply = "hello through serve's gateway"
	api := fakeapi.New()
	// Cache reads are counted but are not spend; the pauses keep the turn
	// streaming while its processes are searched.
	api.Script(fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{
		fakeapi.Text(reply).Spending(fakeapi.Usage{Input: 1200, Output: 17, CacheCreation: 300, CacheRead: 4000}).Streaming(200 * time.Millisecond)}})
	g := newGatewayRig(t, api)
	id := "gw-hello"
	g.wake(id, "--budget-tokens", "1000000")
	g.prompt(id, "say hello")
	var searched int
	require.Eventually(t, func() bool {
		for _, a := range api.InFlight() {
			if strings.Contains(a.Prompt, "say hello") && !a.Started.IsZero() {
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "the turn never reached the model: %+v", api.Answered())
	agent := g.bridgeStatus(id).AgentPID
	require.NotZero(t, agent, "Claude Code runs the turn")
	procs := g.procs(id)
	require.Contains(t, procs, agent, "the search covers Claude Code")
	searched = requireInNoProcess(t, procs, gatewayKey)
	g.waitIdle(id, 90*time.Second)
	require.Contains(t, g.ok("chat", id), reply, "the fake's answer came back through the gateway")

	answers := api.Answered()
	require.NotEmpty(t, answers)
	for _, a := range answers {
		require.Equal(t, gatewayKey, a.APIKey, "serve forwarded %s with its key: the search below looks for what is there", a.ID)
		require.True(t, a.Whole(), "%s answered whole", a.ID)
	}
	want := sumOf(answers)
	rec := g.counted(id)
	now := time.Now()
	got := rec.CountedOn(now)
	require.Equal(t, want, tokens(got), "the gateway counted what the model's answers said")
	require.Positive(t, got.CostMicros, "and priced it")
	ids := make([]string, 0, len(rec.ModelCalls))
	for _, c := range rec.ModelCalls {
		ids = append(ids, c.ID)
	}
	require.ElementsMatch(t, ids, idsOf(answers), "every call counted, once")
	spend := want.Spend().Tokens
	require.Equal(t, int64(1200+300+17)+otherSpend(answers, "say hello"), spend, "input + cache writes + output, not cache reads")

	t.Run("status shows the gateway's count", func(t *testing.T) {
		s := g.status(id)
		require.NotNil(t, s.Spend, "a spore with a budget shows its spend: %+v", s)
		require.Equal(t, spend, s.Spend.Tokens, "status's spend is the gateway's count")
		require.Equal(t, got.CostMicros, s.Spend.CostMicros)
	})

	g.stopServe()
	files, after := g.requireNowhere(gatewayKey, id)
	require.Greater(t, files, 10, "the store, the home and the run files were searched")
	t.Logf("searched %d files, %d processes mid-turn, %d after, %d command outputs, serve's log", files, searched, after, len(g.outputs))
	g.requireTokenUnprinted(id)
	require.Contains(t, g.serveLog(), "serving the model gateway on "+g.apiURL+"/model/ to "+g.upstream+", its key from", "serve held the key, and said so")
}

func idsOf(answers []fakeapi.Answer) []string {
	out := make([]string, 0, len(answers))
	for _, a := range answers {
		out = append(out, a.ID)
	}
	return out
}

// otherSpend is the spend of the answers to prompts other than prompt
// (Claude Code's side calls, if it makes any).
func otherSpend(answers []fakeapi.Answer, prompt string) int64 {
	return sumOf(slices.DeleteFunc(slices.Clone(answers), func(a fakeapi.Answer) bool { return strings.Contains(a.Prompt, prompt) })).Spend().Tokens
}
