package policy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// today is an hour of activity at now's hour.
func today(now time.Time, in, out, cost int64) []state.HourActivity {
	return []state.HourActivity{
		{Hour: state.Day(now).Add(-time.Hour), InputTokens: 1000, CostMicros: 1000}, // yesterday's
		{Hour: now.Truncate(time.Hour), InputTokens: in, OutputTokens: out, CostMicros: cost},
	}
}

// counted is a gateway record of usage counted at now's hour, and some
// yesterday.
func counted(now time.Time, u state.Usage) state.GatewayRecord {
	return state.GatewayRecord{ModelUsage: []state.HourUsage{
		{Hour: state.Day(now).Add(-time.Hour), Calls: 1, Usage: state.Usage{InputTokens: 5000, CostMicros: 5000}}, // yesterday's
		{Hour: now.Truncate(time.Hour), Calls: 1, Usage: u},
	}}
}

func TestSpendOf(t *testing.T) {
	sp := state.Spore{Status: state.Status{
		IngestRecord:  state.IngestRecord{Activity: today(t0, 3, 4, 5)},
		GatewayRecord: counted(t0, state.Usage{InputTokens: 100, CacheCreationTokens: 20, CacheReadTokens: 9000, OutputTokens: 3, CostMicros: 40}),
	}}
	gateway, direct := state.Settings{}, state.Settings{ModelGateway: state.GatewayOff}
	for _, c := range []struct {
		name     string
		settings state.Settings
		extra    state.Spend
		want     state.Spend
	}{
		{"direct: its record's hours of today", direct, state.Spend{}, state.Spend{Tokens: 7, CostMicros: 5}},
		{"direct: and what is not recorded yet", direct, state.Spend{Tokens: 10, CostMicros: 1}, state.Spend{Tokens: 17, CostMicros: 6}},
		{"gateway (the default): today's count, cache reads left out", gateway, state.Spend{}, state.Spend{Tokens: 123, CostMicros: 40}},
		{"gateway: what the agent reports adds nothing", gateway, state.Spend{Tokens: 30_000_000, CostMicros: 1}, state.Spend{Tokens: 123, CostMicros: 40}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, SpendOf(sp, c.settings, t0, c.extra)); diff != "" {
				t.Fatalf("SpendOf (-want +got):\n%s", diff)
			}
		})
	}
	require.Equal(t, state.Spend{Tokens: 17, CostMicros: 6}, ReportedSpend(sp, t0, state.Spend{Tokens: 10, CostMicros: 1}), "the agent's report, whatever the mode")
}

func TestCountSpends(t *testing.T) {
	spore := func(id, colony string, b state.Budget, tokens int64) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony, Budget: b}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: today(t0, tokens, 0, 0)}}}
	}
	own := state.Budget{TokensPerDay: 10}
	a, b, c := spore("a", "lab", own, 1), spore("b", "lab", state.Budget{}, 2), spore("c", "ops", state.Budget{}, 4)
	extra := func(id string) state.Spend {
		if id == "a" {
			return state.Spend{Tokens: 100}
		}
		return state.Spend{}
	}
	direct := state.Settings{ModelGateway: state.GatewayOff}
	lab := direct.WithColony("lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 50}})
	// With the gateway on, a's count is 7 whatever its agent reports.
	a.GatewayRecord = counted(t0, state.Usage{InputTokens: 7})
	labGateway := state.Settings{}.WithColony("lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 50}})
	for _, tc := range []struct {
		name         string
		covered, all []state.Spore
		settings     state.Settings
		want         Spends
	}{
		{"no budget anywhere: nothing counted", []state.Spore{b, c}, []state.Spore{a, b, c}, direct, Spends{}},
		{"a spore's own budget: it alone, with what is not recorded yet", []state.Spore{a, b}, []state.Spore{a, b, c}, direct,
			Spends{Spore: map[string]state.Spend{"a": {Tokens: 101}}}},
		{"gateway: the count judged, the report beside it", []state.Spore{a, b}, []state.Spore{a, b, c}, state.Settings{},
			Spends{Spore: map[string]state.Spend{"a": {Tokens: 7}}, Reported: map[string]state.Spend{"a": {Tokens: 101}}}},
		{"gateway: a colony over its spores' counts", []state.Spore{b, c}, []state.Spore{a, b, c}, labGateway,
			Spends{Spore: map[string]state.Spend{"b": {}}, Colony: map[string]state.Spend{"lab": {Tokens: 7}}, Reported: map[string]state.Spend{"b": {Tokens: 2}}}},
		{"a colony's budget: its covered spores, and the colony over every spore", []state.Spore{b, c}, []state.Spore{a, b, c}, lab,
			Spends{Spore: map[string]state.Spend{"b": {Tokens: 2}}, Colony: map[string]state.Spend{"lab": {Tokens: 103}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CountSpends(tc.covered, tc.all, tc.settings, t0, extra)); diff != "" {
				t.Fatalf("CountSpends (-want +got):\n%s", diff)
			}
		})
	}
}

func TestColonySpends(t *testing.T) {
	sp := func(id, colony string, tokens int64) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony}, Status: state.Status{IngestRecord: state.IngestRecord{Activity: today(t0, tokens, 0, 1)}}}
	}
	for _, c := range []struct {
		name string
		all  []state.Spore
		want map[string]state.Spend
	}{
		{"no spores", nil, nil},
		{"each colony, budget or not", []state.Spore{sp("a", "lab", 1), sp("b", "lab", 2), sp("c", "ops", 4)},
			map[string]state.Spend{"lab": {Tokens: 3, CostMicros: 2}, "ops": {Tokens: 4, CostMicros: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, ColonySpends(c.all, state.Settings{ModelGateway: state.GatewayOff}, t0)); diff != "" {
				t.Fatalf("ColonySpends (-want +got):\n%s", diff)
			}
		})
	}
}

func TestColonySpendsWithTheGateway(t *testing.T) {
	a := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab"}, Status: state.Status{
		IngestRecord:  state.IngestRecord{Activity: today(t0, 30_000_000, 0, 0)},
		GatewayRecord: counted(t0, state.Usage{InputTokens: 10, OutputTokens: 2, CostMicros: 3}),
	}}
	b := state.Spore{Wish: state.Wish{ID: "b", Colony: "lab"}, Status: state.Status{GatewayRecord: counted(t0, state.Usage{OutputTokens: 5})}}
	got := ColonySpends([]state.Spore{a, b}, state.Settings{ModelGateway: state.GatewayOn}, t0)
	require.Equal(t, map[string]state.Spend{"lab": {Tokens: 17, CostMicros: 3}}, got, "the gateway's counts, not a's forged report")
}

func TestUsageDiffers(t *testing.T) {
	for _, c := range []struct {
		name              string
		reported, counted int64
		want              bool
	}{
		{"equal", 1_000_000, 1_000_000, false},
		{"nothing either way", 0, 0, false},
		{"a small day: 20,000 tokens apart is within", 0, 20_000, false},
		{"a small day: 20,001 tokens apart is beyond", 0, 20_001, true},
		{"a report a quarter short of the count is within", 750_000, 1_000_000, false},
		{"a report more than a quarter short is beyond", 749_999, 1_000_000, true},
		{"a report a quarter above the count is within", 1_000_000, 750_000, false},
		{"a forged report", 30_000_000, 1_000, true},
		{"a report of nothing against a real count", 0, 5_000_000, true},
		{"the largest counts do not overflow", math.MaxInt64, 0, true},
		{"nor the other way", 0, math.MaxInt64, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, UsageDiffers(c.reported, c.counted))
		})
	}
}

func TestReaches(t *testing.T) {
	for _, c := range []struct {
		name string
		s    state.Spend
		b    state.Budget
		want bool
	}{
		{"no budget is never reached", state.Spend{Tokens: 1 << 40, CostMicros: 1 << 40}, state.Budget{}, false},
		{"tokens below", state.Spend{Tokens: 19}, state.Budget{TokensPerDay: 20}, false},
		{"tokens met", state.Spend{Tokens: 20}, state.Budget{TokensPerDay: 20}, true},
		{"cost met, tokens not", state.Spend{Tokens: 1, CostMicros: 2_000_000}, state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_000_000}, true},
		{"an unset limit is no limit", state.Spend{Tokens: 99}, state.Budget{CostPerDayMicros: 5}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Reaches(c.s, c.b)); diff != "" {
				t.Fatalf("Reaches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOver(t *testing.T) {
	type verdict struct {
		Over, Colony bool
		Text         string
	}
	spore := func(r state.Rank, b state.Budget) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: r, Budget: b}}
	}
	twenty := state.Budget{TokensPerDay: 20}
	dollars := state.Budget{CostPerDayMicros: 2_000_000}
	for _, c := range []struct {
		name        string
		sp          state.Spore
		own, colony state.Spend
		colonyB     state.Budget
		want        verdict
	}{
		{"within everything", spore(state.RankSpore, twenty), state.Spend{Tokens: 19}, state.Spend{CostMicros: 1}, dollars, verdict{}},
		{"its own budget", spore(state.RankSpore, twenty), state.Spend{Tokens: 24}, state.Spend{}, state.Budget{}, verdict{true, false, "24/20 tokens today"}},
		{"its colony's", spore(state.RankSpore, state.Budget{}), state.Spend{}, state.Spend{CostMicros: 2_100_000}, dollars,
			verdict{true, true, "colony lab: $2.10/$2.00 today"}},
		{"its own first", spore(state.RankSpore, twenty), state.Spend{Tokens: 20}, state.Spend{CostMicros: 3_000_000}, dollars,
			verdict{true, false, "20/20 tokens today"}},
		{"the [arch] never", spore(state.RankArch, twenty), state.Spend{Tokens: 99}, state.Spend{CostMicros: 3_000_000}, dollars, verdict{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got verdict
			got.Over, got.Colony, got.Text = Over(c.sp, c.own, c.colonyB, c.colony)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("Over (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpendText(t *testing.T) {
	for _, c := range []struct {
		name string
		s    state.Spend
		b    state.Budget
		want string
	}{
		{"tokens reached", state.Spend{Tokens: 24, CostMicros: 1}, state.Budget{TokensPerDay: 20, CostPerDayMicros: 5}, "24/20 tokens today"},
		{"cost reached", state.Spend{Tokens: 2, CostMicros: 2_100_000}, state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_000_000}, "$2.10/$2.00 today"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, SpendText(c.s, c.b)); diff != "" {
				t.Fatalf("SpendText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeliverable(t *testing.T) {
	a, b := state.OutboxEntry{ID: "p-a"}, state.OutboxEntry{ID: "p-b", OverBudget: true}
	for _, c := range []struct {
		name    string
		pending []state.OutboxEntry
		over    bool
		want    []state.OutboxEntry
	}{
		{"within budget: all, in queue order", []state.OutboxEntry{a, b}, false, []state.OutboxEntry{a, b}},
		{"over: only those marked over-budget", []state.OutboxEntry{a, b}, true, []state.OutboxEntry{b}},
		{"over, none marked: nothing", []state.OutboxEntry{a}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Deliverable(c.pending, c.over)); diff != "" {
				t.Fatalf("Deliverable (-want +got):\n%s", diff)
			}
		})
	}
}
