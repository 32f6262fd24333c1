package colonyspec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestBudgetInAColony(t *testing.T) {
	docs := doc(t, "  - {id: red-1, rank: spore, swarm: red, role: dev, budget: {tokensPerDay: 20, costPerDay: 2.50}}\n"+
		"  - {id: new-1, budget: {tokensPerDay: 5}}\n")
	p, err := MakePlan(docs, stored, state.Settings{}, Options{})
	require.NoError(t, err)
	byID := map[string]Change{}
	for _, c := range p.Changes {
		byID[c.ID] = c
	}
	red := byID["red-1"]
	require.Equal(t, Configured, red.Action)
	require.Equal(t, &state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}, red.Budget)
	require.Contains(t, red.Diffs, Diff{"budget", "none", "20 tokens, $2.50 a day"})
	require.Equal(t, state.Budget{TokensPerDay: 5}, byID["new-1"].New.Budget)

	// Defaults give every spore that leaves it out the same budget.
	docs = doc(t, "  - {id: red-1, rank: spore, swarm: red, role: dev}\n")
	docs[0].Spec.Defaults = &Fields{Budget: &Budget{TokensPerDay: ptr("7")}}
	p, err = MakePlan(docs, stored, state.Settings{}, Options{})
	require.NoError(t, err)
	require.Equal(t, &state.Budget{TokensPerDay: 7}, p.Changes[0].Budget)

	// Exported, a budget reads back as the same.
	withBudget := append([]state.Spore(nil), stored...)
	withBudget[2].Budget = state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}
	e := Export("lab", withBudget, state.Settings{})
	var got *Budget
	for _, s := range e.Spec.Spores {
		if s.ID == "red-1" {
			got = s.Budget
		}
	}
	require.NotNil(t, got)
	require.Equal(t, state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}, got.budget())

	for field, spores := range map[string]string{
		"spec.spores[0].budget.tokensPerDay": "  - {id: red-1, budget: {tokensPerDay: -1}}\n",
		"spec.spores[0].budget.costPerDay":   "  - {id: red-1, budget: {costPerDay: lots}}\n",
	} {
		_, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"+spores))
		require.ErrorContains(t, err, field)
		require.ErrorContains(t, err, "lab.yaml:")
	}
	_, err = MakePlan(doc(t, "  - {id: arch-2, rank: arch, budget: {tokensPerDay: 5}}\n"), stored, state.Settings{}, Options{})
	require.ErrorContains(t, err, "always on")
}
