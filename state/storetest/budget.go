package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testBudgets: a spore's budget, a colony's budget and an outbox entry's
// over-budget mark are stored exactly and read back by every reader; a
// negative limit is refused with nothing written.
func testBudgets(t *testing.T, s state.Store) {
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("one")) }))
	get := func() state.Spore { return spore(t, s, "one") }
	require.Zero(t, get().Budget)
	b := state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Budget = b }))
	require.Equal(t, b, get().Budget)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, b, spores[0].Budget)

	err := update(ctx, s, "one", func(sp *state.Spore) { sp.Budget.TokensPerDay = -1 })
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "budget.tokens_per_day", inv.Field)
	require.Equal(t, b, get().Budget, "nothing written")
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Budget = state.Budget{} }))
	require.Zero(t, get().Budget)

	settings := view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	lab := state.ColonySettings{Budget: state.Budget{TokensPerDay: 1000}}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, settings.WithColony("lab", lab)) }))
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	require.Equal(t, lab, got.Colony("lab"))
	err = s.Update(ctx, func(tx state.Tx) error {
		return tx.PutSettings(ctx, settings.WithColony("lab", state.ColonySettings{Budget: state.Budget{CostPerDayMicros: -5}}))
	})
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "colonies.lab.budget.cost_per_day_micros", inv.Field)

	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, e := range []state.OutboxEntry{
			{ID: "m1", Spore: "one", From: "user:a", Text: "waits", At: t0},
			{ID: "m2", Spore: "one", From: "user:a", Text: "goes", At: t0, OverBudget: true},
		} {
			if _, err := tx.Enqueue(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}))
	out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Len(t, out, 2)
	require.False(t, out[0].OverBudget)
	require.True(t, out[1].OverBudget)
	pending := view(t, s, func(ctx context.Context, tx state.Tx) (map[string][]state.OutboxEntry, error) { return tx.Pending(ctx) })
	require.True(t, pending["one"][1].OverBudget)
	require.False(t, pending["one"][0].OverBudget)
}
