package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// colony list shows each colony's budget and what its spores spent today
// together, as the gateway counted it (yesterday's hours not counted, the
// agents' reports not judged), "(over)" once it is reached;
// -o wide adds its pod options, which colony set sets, changes only as
// the flags say and removes with an empty value.
func TestColonyListShowsBudgetSpendAndPodOptions(t *testing.T) {
	store := fixture(t)
	st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	hour := testNow.UTC().Truncate(time.Hour)
	type call struct {
		at time.Time
		u  state.Usage
	}
	spent := map[string][]call{
		"worker-7": {{hour.Add(-24 * time.Hour), state.Usage{InputTokens: 1000, CostMicros: 9_000_000}}, {hour, state.Usage{InputTokens: 14, OutputTokens: 10, CostMicros: 120_000}}},
	}
	var lab []string
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		spores, err := tx.Spores(ctx)
		for _, sp := range spores {
			if sp.Colony != "lab" {
				continue
			}
			lab = append(lab, sp.ID)
			calls, ok := spent[sp.ID]
			if !ok {
				calls = []call{{hour, state.Usage{OutputTokens: 6, CostMicros: 80_000}}}
			}
			for i, c := range calls {
				if _, err := state.CountModelCall(ctx, tx, sp.ID, fmt.Sprintf("msg_%d", i), c.u, c.at); err != nil {
					return err
				}
			}
			// What the agents report is theirs: not what the list shows.
			if _, err := state.UpdateStatus(ctx, tx, sp.ID, func(_ state.Spore, st *state.Status) error {
				st.Activity = []state.HourActivity{{Hour: hour, InputTokens: 5_000_000}}
				return nil
			}); err != nil {
				return err
			}
		}
		return err
	}))
	require.Len(t, lab, 2, "the fixture's colony lab has two spores")

	require.Equal(t, "colony/lab configured\n", mustRun(t, store, "colony", "set", "lab", "--budget-tokens", "30", "--budget-cost", "5"))
	out := mustRun(t, store, "colony", "list")
	require.Contains(t, out, "30 tokens, $5.00   30 tokens, $0.20 (over)", out)
	require.Contains(t, out, "none", "hq has no budget")

	r := run(t, store, "colony", "set", "lab", "--runtime-class", "gvisor", "--label", "team=lab", "--toleration", "agents:NoSchedule")
	require.Equal(t, 0, r.code, "%s", r.err)
	require.Equal(t, "colony/lab configured\n", r.out)
	require.Contains(t, r.err, "local runtime ignores pod options", "the fixture's store is local: it says so")
	want := &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "lab"},
		Tolerations: []state.Toleration{{Key: "agents", Operator: state.TolerationExists, Effect: state.EffectNoSchedule}}}
	settings := func() state.Settings {
		var s state.Settings
		require.NoError(t, st.View(ctx, func(tx state.Tx) error { s, err = tx.Settings(ctx); return err }))
		return s
	}
	require.Equal(t, want, settings().Colony("lab").Pod)
	require.Equal(t, state.Budget{TokensPerDay: 30, CostPerDayMicros: 5_000_000}, settings().Colony("lab").Budget, "the budget is kept")
	require.Equal(t, "colony/lab unchanged\n", mustRun(t, store, "colony", "set", "lab", "--runtime-class", "gvisor"))
	wide := mustRun(t, store, "colony", "list", "-o", "wide")
	require.Contains(t, strings.SplitN(wide, "\n", 2)[0], "POD-OPTIONS")
	require.Contains(t, wide, "runtime class gvisor, 1 toleration, 1 label")

	var doc struct {
		Colonies []struct {
			Name       string            `json:"name"`
			Budget     state.Budget      `json:"budget"`
			SpendToday state.Spend       `json:"spend_today"`
			Pod        *state.PodOptions `json:"pod"`
		} `json:"colonies"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, store, "colony", "list", "-o", "json")), &doc))
	var found bool
	for _, c := range doc.Colonies {
		if c.Name == "lab" {
			found = true
			require.Equal(t, state.Spend{Tokens: 30, CostMicros: 200_000}, c.SpendToday)
			require.Equal(t, want, c.Pod)
		}
	}
	require.True(t, found)

	// An empty value removes its field; the others stay.
	mustRun(t, store, "colony", "set", "lab", "--runtime-class", "", "--toleration", "")
	require.Equal(t, &state.PodOptions{Labels: map[string]string{"team": "lab"}}, settings().Colony("lab").Pod)

	// A bad value is exit 2 naming the flag, and nothing is written.
	for _, args := range [][]string{
		{"--label", "sporectl.dev/spore=x"},
		{"--toleration", "a=b:Sometimes"},
		{"--env-from-secret", "spore-other"},
	} {
		r := run(t, store, append([]string{"colony", "set", "lab"}, args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Contains(t, r.err, args[0], "%v: the flag is named", args)
		require.Equal(t, &state.PodOptions{Labels: map[string]string{"team": "lab"}}, settings().Colony("lab").Pod, "%v: nothing written", args)
	}
}

// colony set --ingest-quota sets the MiB each spore of the colony may
// have stored per day; a value out of bounds is exit 2 naming the flag.
func TestColonySetIngestQuota(t *testing.T) {
	store := fixture(t)
	require.Equal(t, "colony/lab configured\n", mustRun(t, store, "colony", "set", "lab", "--ingest-quota", "128"))
	st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	var s state.Settings
	require.NoError(t, st.View(t.Context(), func(tx state.Tx) error { s, err = tx.Settings(t.Context()); return err }))
	require.Equal(t, int64(128), s.Colony("lab").IngestQuotaMiB)
	require.Equal(t, int64(128<<20), state.IngestQuotaOf(state.Spore{Wish: state.Wish{Colony: "lab"}}, s))
	require.Equal(t, int64(state.DefaultIngestQuotaMiB<<20), state.IngestQuotaOf(state.Spore{Wish: state.Wish{Colony: "hq"}}, s), "another colony has the default")

	r := run(t, store, "colony", "set", "lab", "--ingest-quota", "-1")
	require.Equal(t, ExitUsage, r.code, r.err)
	require.Contains(t, r.err, "--ingest-quota")
}
