package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

func TestSpendOnTheUTCDay(t *testing.T) {
	now := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	act := []state.HourActivity{
		{Hour: time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC), InputTokens: 1000, CostMicros: 1000},
		{Hour: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), InputTokens: 5, OutputTokens: 7, CostMicros: 12},
		{Hour: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), InputTokens: 1, OutputTokens: 2, CostMicros: 3},
	}
	require.Equal(t, state.Spend{Tokens: 15, CostMicros: 15}, state.SpendOn(act, now), "yesterday's hours do not count")
	require.Equal(t, state.Spend{}, state.SpendOn(act, now.Add(24*time.Hour)), "the next day starts at nothing")
	require.Equal(t, state.Spend{Tokens: 1000, CostMicros: 1000}, state.SpendOn(act, now.Add(-10*time.Hour)))
	// In another zone, the same instant is the same UTC day.
	require.Equal(t, state.Spend{Tokens: 15, CostMicros: 15}, state.SpendOn(act, now.In(time.FixedZone("X", -11*3600))))
}

func TestPlanBudget(t *testing.T) {
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	idle := Observed{Pod: PodRunning, Bridge: BridgeUp, Pods: 1, Activity: bridge.StateIdle}
	working := idle
	working.Activity = bridge.StateWorking
	spent := func(tokens int64, at time.Time) []state.HourActivity {
		return []state.HourActivity{{Hour: at.Truncate(time.Hour), InputTokens: tokens / 2, OutputTokens: tokens - tokens/2, CostMicros: tokens}}
	}
	awake := func(id string, budget int64, tokens int64, f func(*state.Spore)) state.Spore {
		s := state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Updated: now.Add(-time.Hour),
			Budget: state.Budget{TokensPerDay: budget}}, Status: state.Status{HealthRecord: state.HealthRecord{Health: policy.Healthy}, IngestRecord: state.IngestRecord{Activity: spent(tokens, now)}}}
		if f != nil {
			f(&s)
		}
		return s
	}
	slept := func(s *state.Spore) { s.Desired, s.DesiredBy, s.Health = state.Paused, state.ByBudget, policy.Paused }
	entry := func(id string, over bool) state.OutboxEntry {
		return state.OutboxEntry{ID: id, Spore: "a", From: "user:ann", Text: id, At: now, OverBudget: over}
	}
	labBudget := func(tokens int64) state.Settings {
		return state.Settings{}.WithColony("lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: tokens}})
	}
	cases := []struct {
		name     string
		spores   []state.Spore // the first is "a", the one judged
		obs      Observed
		settings state.Settings
		pending  []state.OutboxEntry
		over     string
		deliver  []string
		sleep    bool
		wake     bool
	}{
		{name: "within its budget: delivered", spores: []state.Spore{awake("a", 20, 19, nil)}, obs: idle,
			pending: []state.OutboxEntry{entry("p1", false)}, deliver: []string{"p1"}},
		{name: "no budget anywhere: delivered", spores: []state.Spore{awake("a", 0, 1e9, nil)}, obs: idle,
			pending: []state.OutboxEntry{entry("p1", false)}, deliver: []string{"p1"}},
		{name: "at its budget, working: nothing delivered, not slept mid-turn", spores: []state.Spore{awake("a", 20, 20, nil)}, obs: working,
			pending: []state.OutboxEntry{entry("p1", false)}, over: "20/20 tokens today"},
		{name: "over its budget, turn ended: slept, nothing delivered", spores: []state.Spore{awake("a", 20, 24, nil)}, obs: idle,
			pending: []state.OutboxEntry{entry("p1", false)}, over: "24/20 tokens today", sleep: true},
		{name: "over its budget, a turn queued at the bridge: not slept yet", spores: []state.Spore{awake("a", 20, 24, nil)},
			obs: func() Observed { o := idle; o.Queue = 1; return o }(), over: "24/20 tokens today"},
		{name: "over its budget: an entry marked over-budget is delivered, the rest waits", spores: []state.Spore{awake("a", 20, 24, nil)}, obs: idle,
			pending: []state.OutboxEntry{entry("p1", false), entry("p2", true)}, over: "24/20 tokens today", deliver: []string{"p2"}},
		{name: "over its cost budget", spores: []state.Spore{awake("a", 0, 30, func(s *state.Spore) { s.Budget.CostPerDayMicros = 25 })}, obs: idle,
			over: "$0.000030/$0.000025 today", sleep: true},
		{name: "yesterday's spend: a new day, delivered", spores: []state.Spore{awake("a", 20, 0, func(s *state.Spore) { s.Activity = spent(500, now.Add(-13*time.Hour)) })}, obs: idle,
			pending: []state.OutboxEntry{entry("p1", false)}, deliver: []string{"p1"}},
		{name: "the colony's sum over its budget: over, each under its own", spores: []state.Spore{awake("a", 0, 60, nil), awake("b", 0, 50, nil),
			awake("c", 0, 500, func(s *state.Spore) { s.Colony = "other" })}, obs: idle, settings: labBudget(100),
			pending: []state.OutboxEntry{entry("p1", false)}, over: "colony lab: 110/100 tokens today", sleep: true},
		{name: "the colony's sum under its budget", spores: []state.Spore{awake("a", 0, 40, nil), awake("b", 0, 50, nil),
			awake("c", 0, 500, func(s *state.Spore) { s.Colony = "other" })}, obs: idle, settings: labBudget(100),
			pending: []state.OutboxEntry{entry("p1", false)}, deliver: []string{"p1"}},
		{name: "the [arch] is never held back", spores: []state.Spore{awake("a", 0, 500, func(s *state.Spore) { s.Rank = state.RankArch })}, obs: idle,
			settings: labBudget(100), pending: []state.OutboxEntry{entry("p1", false)}, deliver: []string{"p1"}},
		{name: "slept by budget, raised: woken for what is queued", spores: []state.Spore{awake("a", 30, 24, slept)}, obs: Observed{Pod: PodAbsent},
			pending: []state.OutboxEntry{entry("p1", false)}, wake: true},
		{name: "slept by budget, the next day: woken for what is queued", spores: []state.Spore{awake("a", 20, 0, func(s *state.Spore) { slept(s); s.Activity = spent(24, now.Add(-24*time.Hour)) })},
			obs: Observed{Pod: PodAbsent}, pending: []state.OutboxEntry{entry("p1", false)}, wake: true},
		{name: "slept by budget, still over: stays asleep", spores: []state.Spore{awake("a", 20, 24, slept)}, obs: Observed{Pod: PodAbsent},
			pending: []state.OutboxEntry{entry("p1", false)}, over: "24/20 tokens today"},
		{name: "slept by budget, within it, nothing queued: stays asleep", spores: []state.Spore{awake("a", 30, 24, slept)}, obs: Observed{Pod: PodAbsent}},
		{name: "slept by a person, within budget: stays asleep", spores: []state.Spore{awake("a", 30, 24, func(s *state.Spore) { slept(s); s.DesiredBy = state.ByPerson })},
			obs: Observed{Pod: PodAbsent}, pending: []state.OutboxEntry{entry("p1", false)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.settings.ModelGateway = state.GatewayOff // the agent's report: Activity
			snap := &Snapshot{Settings: c.settings, Spores: c.spores[:1], All: c.spores}
			in := PlanInput{Now: now, Policy: state.RecoveryPolicy{}.WithDefaults(), Spores: snap.Spores, Observed: map[string]Observed{"a": c.obs},
				Pending: map[string][]state.OutboxEntry{"a": c.pending}, Heal: true, Deliver: true, Settings: c.settings,
				Spends: countSpends(snap, nil, now)}
			p := Plan(in)[0]
			require.Equal(t, c.over != "", p.OverBudget)
			require.Equal(t, c.over, p.OverText)
			var got []string
			for _, e := range p.Deliver {
				got = append(got, e.ID)
			}
			require.Equal(t, c.deliver, got)
			require.Equal(t, c.sleep, p.SleepBudget, "sleep")
			require.Equal(t, c.wake, p.WakeBudget, "wake")
			if c.sleep {
				require.False(t, p.SleepIdle, "a budget's sleep, not idle's")
				require.False(t, p.Stop, "the stop follows the recorded sleep, not the plan")
			}
		})
	}
}

func TestCountSpendsIncludesThisPassAndSkipsFleetsWithoutBudgets(t *testing.T) {
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	a := state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Budget: state.Budget{TokensPerDay: 10}}}
	b := state.Spore{Wish: state.Wish{ID: "b", Colony: "lab"}}
	got := map[string]*ingested{
		"a": {counts: []lineCounts{{in: 3, out: 4, cost: 9}, {in: 1000}}, events: []state.Event{{At: now}, {At: now.Add(-24 * time.Hour)}}},
		"b": {counts: []lineCounts{{in: 1}}, events: []state.Event{{}}},
	}
	direct := state.Settings{ModelGateway: state.GatewayOff}
	s := countSpends(&Snapshot{Settings: direct, Spores: []state.Spore{a, b}, All: []state.Spore{a, b}}, got, now)
	require.Equal(t, map[string]state.Spend{"a": {Tokens: 1007, CostMicros: 9}}, s.Spore,
		"only a spore with a budget is counted, and every line it ingests is today's, a line stamped yesterday too")
	require.Nil(t, s.Colony)
	require.Nil(t, s.Reported, "the direct mode: the report is the spend")
	none := countSpends(&Snapshot{Settings: direct, Spores: []state.Spore{b}, All: []state.Spore{a, b}}, got, now)
	require.Nil(t, none.Spore)

	// With the gateway (the default) the count is judged and the lines
	// are the report beside it.
	a.GatewayRecord, _ = a.GatewayRecord.Count("msg_1", state.Usage{InputTokens: 5, OutputTokens: 1, CostMicros: 2}, now)
	s = countSpends(&Snapshot{Spores: []state.Spore{a, b}, All: []state.Spore{a, b}}, got, now)
	require.Equal(t, map[string]state.Spend{"a": {Tokens: 6, CostMicros: 2}}, s.Spore)
	require.Equal(t, map[string]state.Spend{"a": {Tokens: 1007, CostMicros: 9}}, s.Reported)

	lab := direct.WithColony("lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 100}})
	s = countSpends(&Snapshot{Settings: lab, Spores: []state.Spore{b}, All: []state.Spore{a, b}}, got, now)
	require.Equal(t, state.Spend{Tokens: 1008, CostMicros: 9}, s.Colony["lab"], "every spore of the colony, covered or not")
	require.Equal(t, state.Spend{Tokens: 1}, s.Spore["b"])
}

// BenchmarkCountSpends is the budget accounting a pass adds to ingest: a
// fleet of 100 spores, each with a budget, a full week of hourly activity
// and 802 lines just ingested, in 10 colonies with budgets.
func BenchmarkCountSpends(b *testing.B) {
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	var settings state.Settings
	snap := &Snapshot{}
	got := map[string]*ingested{}
	for i := range 100 {
		id := fmt.Sprintf("s-%03d", i)
		colony := fmt.Sprintf("c-%d", i%10)
		settings = settings.WithColony(colony, state.ColonySettings{Budget: state.Budget{TokensPerDay: 1 << 40}})
		sp := state.Spore{Wish: state.Wish{ID: id, Colony: colony, Budget: state.Budget{TokensPerDay: 1 << 40}}}
		for h := state.MaxActivity - 1; h >= 0; h-- {
			sp.Activity = append(sp.Activity, state.HourActivity{Hour: now.Truncate(time.Hour).Add(-time.Duration(h) * time.Hour), InputTokens: 100, OutputTokens: 50, CostMicros: 7})
		}
		snap.Spores = append(snap.Spores, sp)
		in := &ingested{}
		for range 802 {
			in.events = append(in.events, state.Event{At: now})
			in.counts = append(in.counts, lineCounts{in: 3, out: 2, cost: 1})
		}
		got[id] = in
	}
	snap.All, snap.Settings = snap.Spores, settings
	b.ResetTimer()
	for b.Loop() {
		s := countSpends(snap, got, now)
		if len(s.Spore) != 100 || len(s.Colony) != 10 {
			b.Fatal("not every spore and colony counted")
		}
	}
}
