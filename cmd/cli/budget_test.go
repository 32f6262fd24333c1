package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestBudgetFlagsParse(t *testing.T) {
	o, err := parse(t, newCmdCreate, "w-1", "--budget-tokens", "20", "--budget-cost", "2.50")
	require.NoError(t, err)
	assert.Equal(t, state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}, o.Budget)
	s, err := parse(t, newCmdSetBudget, "a", "b", "--tokens", "1000")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, s.IDs)
	assert.Equal(t, state.Budget{TokensPerDay: 1000}, s.Budget)
	c, err := parse(t, newCmdColonySet, "lab", "--budget-cost", "$20")
	require.NoError(t, err)
	assert.Equal(t, int64(20_000_000), c.BudgetCost)
	assert.False(t, c.changed("budget-tokens"), "only the flags given change")

	for name, args := range map[string][]string{
		"create: negative tokens":  {"w-1", "--budget-tokens", "-1"},
		"create: not a cost":       {"w-1", "--budget-cost", "lots"},
		"create: a negative cost":  {"w-1", "--budget-cost", "-2"},
		"create: on the arch":      {"w-1", "--rank", "arch", "--budget-tokens", "5"},
		"set: negative":            {"a", "--tokens", "-5"},
		"set: no id":               {"--tokens", "5"},
		"colony set: not a cost":   {"lab", "--budget-cost", "2,50"},
		"colony set: not a number": {"lab", "--budget-tokens", "many"},
	} {
		var err error
		switch name[:3] {
		case "cre":
			_, err = parse(t, newCmdCreate, args...)
		case "set":
			_, err = parse(t, newCmdSetBudget, args...)
		default:
			_, err = parse(t, newCmdColonySet, args...)
		}
		require.Error(t, err, name)
		assert.Equal(t, ExitUsage, exitCode(err), "%s: %v", name, err)
	}
	_, err = parse(t, newCmdSetBudget, "a", "--cost", "lots")
	assert.EqualError(t, err, `invalid value "lots" for --cost: want 0 (no limit) or a cost in US dollars such as 2.50`)
}

func TestPromptToASporeOverBudgetIsQueuedWithExit16(t *testing.T) {
	store := fixture(t)
	st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()

	require.Equal(t, "spore/worker-7 configured\n", mustRun(t, store, "set", "budget", "worker-7", "--tokens", "20"))
	r := run(t, store, "set", "budget", "worker-7", "arch-1", "--tokens", "5")
	require.Equal(t, ExitUsage, r.code, "%s", r.err)
	require.Equal(t, state.Budget{TokensPerDay: 20}, statetest.Spore(t, st, "worker-7").Budget, "all or nothing")
	mustRun(t, store, "wake", "worker-7")

	// Spent 24 tokens today, as the gateway counted its model calls; its
	// agent reports 3 (as ingest counts them).
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		if _, err := state.CountModelCall(ctx, tx, "worker-7", "msg_1", state.Usage{InputTokens: 14, OutputTokens: 10}, testNow); err != nil {
			return err
		}
		_, err := state.UpdateStatus(ctx, tx, "worker-7", func(_ state.Spore, st *state.Status) error {
			st.Activity = []state.HourActivity{{Hour: testNow.UTC().Truncate(time.Hour), InputTokens: 2, OutputTokens: 1}}
			return nil
		})
		return err
	}))

	r = run(t, store, "prompt", "worker-7", "more please")
	require.Equal(t, ExitOverBudget, r.code, "%s", r.err)
	require.Contains(t, r.err, "spore worker-7 is over budget (24/20 tokens today)")
	require.Contains(t, r.out, "over budget (24/20 tokens today)")
	queued := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "worker-7") })
	require.Len(t, queued, 1, "the prompt is kept")
	require.False(t, queued[0].OverBudget)

	r = run(t, store, "prompt", "worker-7", "this one anyway", "--over-budget", "--timeout", "0")
	require.NotEqual(t, ExitOverBudget, r.code, "%s", r.err)
	queued = statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "worker-7") })
	require.True(t, queued[len(queued)-1].OverBudget, "marked to be delivered over budget")

	var doc struct {
		Spores []struct {
			ID            string        `json:"id"`
			Spend         *state.Spend  `json:"spend"`
			ReportedSpend *state.Spend  `json:"reported_spend"`
			Budget        *state.Budget `json:"budget"`
			OverBudget    string        `json:"over_budget"`
		} `json:"spores"`
	}
	r = run(t, store, "status", "worker-7", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(r.out), &doc), r.out)
	require.Equal(t, &state.Spend{Tokens: 24}, doc.Spores[0].Spend, "the gateway's count")
	require.Equal(t, &state.Spend{Tokens: 3}, doc.Spores[0].ReportedSpend, "the agent's own account")
	require.Equal(t, &state.Budget{TokensPerDay: 20}, doc.Spores[0].Budget)
	require.Equal(t, "24/20 tokens today", doc.Spores[0].OverBudget)

	// A raised budget lets the next prompt through.
	mustRun(t, store, "set", "budget", "worker-7", "--tokens", "100")
	r = run(t, store, "prompt", "worker-7", "within budget", "--timeout", "0")
	require.NotEqual(t, ExitOverBudget, r.code, "%s", r.err)
}

func TestOverBudgetExitCode(t *testing.T) {
	require.Equal(t, ExitOverBudget, exitCode(&OverBudgetError{ID: "a", Over: "24/20 tokens today", Entry: "p-1"}))
	require.Equal(t, ExitOverBudget, exitCode(&mycelia.Error{Status: 409, Code: mycelia.CodeOverBudget, Message: "over budget"}), "serve's answer to a tell")
	require.Equal(t, ExitConflict, exitCode(&mycelia.Error{Status: 409, Code: mycelia.CodeConflict, Message: "conflict"}))
}

func TestReconcileReportsABudgetsSleepAndWake(t *testing.T) {
	sleep := &reconcile.SporePlan{Spore: state.Spore{Wish: state.Wish{ID: "a"}}, SleepBudget: true, OverText: "25/20 tokens today", Stop: true}
	wake := &reconcile.SporePlan{Spore: state.Spore{Wish: state.Wish{ID: "b"}}, WakeBudget: true}
	for _, dry := range []bool{false, true} {
		require.Equal(t, []passAction{{Spore: "a", Action: "sleep", Detail: "over budget (25/20 tokens today)"}, {Spore: "b", Action: "wake", Detail: "within budget again, for what is queued"}},
			actionsOf([]*reconcile.SporePlan{sleep, wake}, dry), "dry run %v", dry)
	}
}
