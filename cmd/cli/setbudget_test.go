package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// set budget changes only the limits it names: --cost keeps the token
// limit, --tokens 0 removes that one alone, --clear both; a bare set
// budget, or --clear with a limit, is refused with nothing written.
func TestSetBudgetKeepsWhatItDidNotName(t *testing.T) {
	store := fixture(t)
	budget := func() state.Budget {
		t.Helper()
		st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
		require.NoError(t, err)
		defer st.Close()
		return statetest.Spore(t, st, "worker-7").Budget
	}
	steps := []struct {
		args []string
		out  string
		want state.Budget
	}{
		{[]string{"--tokens", "20", "--cost", "2"}, "configured", state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_000_000}},
		{[]string{"--cost", "1"}, "configured", state.Budget{TokensPerDay: 20, CostPerDayMicros: 1_000_000}},
		{[]string{"--tokens", "30"}, "configured", state.Budget{TokensPerDay: 30, CostPerDayMicros: 1_000_000}},
		{[]string{"--tokens", "30"}, "unchanged", state.Budget{TokensPerDay: 30, CostPerDayMicros: 1_000_000}},
		{[]string{"--tokens", "0"}, "configured", state.Budget{CostPerDayMicros: 1_000_000}},
		{[]string{"--tokens", "5"}, "configured", state.Budget{TokensPerDay: 5, CostPerDayMicros: 1_000_000}},
		{[]string{"--clear"}, "configured", state.Budget{}},
		{[]string{"--clear"}, "unchanged", state.Budget{}},
	}
	for _, s := range steps {
		out := mustRun(t, store, append([]string{"set", "budget", "worker-7"}, s.args...)...)
		require.Equal(t, "spore/worker-7 "+s.out+"\n", out, "%v", s.args)
		require.Equal(t, s.want, budget(), "%v", s.args)
	}

	mustRun(t, store, "set", "budget", "worker-7", "--tokens", "7")
	before := treeHash(t, store)
	for _, args := range [][]string{
		{"set", "budget", "worker-7"},
		{"set", "budget", "worker-7", "--clear", "--tokens", "0"},
		{"set", "budget", "worker-7", "--clear", "--cost", "1"},
	} {
		r := run(t, store, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Empty(t, r.out)
	}
	require.Equal(t, before, treeHash(t, store), "a refused set budget writes nothing")
	require.Equal(t, state.Budget{TokensPerDay: 7}, budget())

	r := run(t, store, "set", "budget", "nope", "--tokens", "1")
	require.Equal(t, ExitNotFound, r.code, r.err)
}
