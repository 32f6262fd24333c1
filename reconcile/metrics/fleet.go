package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// The fleet's families (docs/metrics.md "Families"): what a pass's
// outcome says of the store and the fleet now, on serve and in the
// textfile alike.
var (
	descSpores = prometheus.NewDesc("sporectl_spores",
		"Spores by colony, rank and effective health (docs/health.md), as the pass saw them.",
		[]string{"colony", "rank", "effective"}, nil)
	descOutbox = prometheus.NewDesc("sporectl_outbox_messages",
		"Messages (prompts and messages between spores) queued in the store and not yet delivered, by the colony of their target.",
		[]string{"colony"}, nil)
	descHeld = prometheus.NewDesc("sporectl_outbox_held_messages",
		"Of those messages, the ones held back because their target reached its own or its colony's daily budget (docs/budgets.md); those an operator marked over-budget are not held.",
		[]string{"colony"}, nil)
	descOverBudget = prometheus.NewDesc("sporectl_spores_over_budget",
		"Spores of the colony that reached their own or their colony's daily budget (docs/budgets.md), awake or asleep.",
		[]string{"colony"}, nil)
	descOutboxAge = prometheus.NewDesc("sporectl_outbox_oldest_message_age_seconds",
		"How long the colony's oldest undelivered message has waited since it was sent (0 when none waits).",
		[]string{"colony"}, nil)
	descLag = prometheus.NewDesc("sporectl_ingest_lag_lines",
		"The most lines one bridge of the colony holds that the store does not, after the pass's ingest (bridges that answered).",
		[]string{"colony"}, nil)
	descLagging = prometheus.NewDesc("sporectl_ingest_lagging_spores",
		"Spores of the colony whose bridge holds lines the store does not, after the pass's ingest.",
		[]string{"colony"}, nil)
	descTokens = prometheus.NewDesc("sporectl_tokens_today",
		"Tokens the colony's spores used since 00:00 UTC, as budgets count them (docs/budgets.md): the model gateway's count, or in the direct mode their agents' reports: kind input (read afresh, cache writes included) or output.",
		[]string{"colony", "kind"}, nil)
	descCost = prometheus.NewDesc("sporectl_cost_today_dollars",
		"Cost in US dollars of the colony's spores since 00:00 UTC, as budgets count it (docs/budgets.md): the model gateway's count, or in the direct mode their agents' reports.",
		[]string{"colony"}, nil)
	descObserved = prometheus.NewDesc("sporectl_runtime_observed",
		"1 when the pass could observe the runtime, 0 when it could not (every spore is then Suspect).",
		nil, nil)
	descOrphans = prometheus.NewDesc("sporectl_orphans",
		"Runtime objects marked as sporectl's whose spore is not in the store.",
		nil, nil)
)

// colonyFigures is one colony's sums over its spores.
type colonyFigures struct {
	// spores[rank][i] counts the rank's spores in EffectiveStates[i].
	spores          map[state.Rank][]int
	pending         int
	held, over      int
	oldest          time.Time
	lag             uint64
	lagging         int
	in, out, micros int64
}

// fleet is a pass's outcome as const metrics: built once, collected by
// one registry (a scrape's or a textfile's).
type fleet struct{ metrics []prometheus.Metric }

func (f fleet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSpores, descOutbox, descHeld, descOverBudget, descOutboxAge, descLag, descLagging, descTokens, descCost, descObserved, descOrphans} {
		ch <- d
	}
}

func (f fleet) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f.metrics {
		ch <- m
	}
}

// Fleet is the fleet's families as out, a pass's outcome, says at now.
// Every colony of the pass's spores has each family's series; sporectl_spores
// has one per effective state for each rank the colony has (zeros
// included), so a state that empties reads 0, not absent.
func Fleet(out *reconcile.Outcome, now time.Time) prometheus.Collector {
	now = now.UTC()
	day := now.Truncate(24 * time.Hour)
	states := len(policy.Derived)
	index := make(map[policy.Health]int, states)
	for i, e := range policy.Derived {
		index[e] = i
	}
	cols := map[string]*colonyFigures{}
	for i, s := range out.Spores {
		c := cols[s.Colony]
		if c == nil {
			c = &colonyFigures{spores: map[state.Rank][]int{}}
			cols[s.Colony] = c
		}
		byState := c.spores[s.Rank]
		if byState == nil {
			byState = make([]int, states)
			c.spores[s.Rank] = byState
		}
		if j, ok := index[s.Effective]; ok {
			byState[j]++
		}
		c.pending += s.Pending
		c.held += s.Held
		if s.OverBudget != "" {
			c.over++
		}
		if s.Pending > 0 && (c.oldest.IsZero() || s.PendingSince.Before(c.oldest)) {
			c.oldest = s.PendingSince
		}
		// Plans and Spores are one list in one order (reconcile.result);
		// an outcome without plans has no lag or activity to tell.
		if i >= len(out.Plans) || out.Plans[i].Spore.ID != s.ID {
			continue
		}
		p := out.Plans[i]
		if lag, ok := p.Behind(); ok && lag > 0 {
			c.lagging++
			c.lag = max(c.lag, lag)
		}
		if out.Counted {
			// What the gateway counted, as budgets judge it.
			u := p.Spore.CountedOn(now)
			c.in = state.AddCount(c.in, state.AddCount(u.InputTokens, u.CacheCreationTokens))
			c.out = state.AddCount(c.out, u.OutputTokens)
			c.micros = state.AddCount(c.micros, u.CostMicros)
			continue
		}
		// Ascending by hour: today's are the last few of up to a week's,
		// read from the end (a scrape at 10,000 spores reads 24 hours of
		// each, not 168).
		hs := p.Activity(now)
		for j := len(hs) - 1; j >= 0 && !hs[j].Hour.Before(day); j-- {
			if h := &hs[j]; !h.Hour.After(now) {
				c.in = state.AddCount(c.in, h.InputTokens)
				c.out = state.AddCount(c.out, h.OutputTokens)
				c.micros = state.AddCount(c.micros, h.CostMicros)
			}
		}
	}
	names := make([]string, 0, len(cols))
	for n := range cols {
		names = append(names, n)
	}
	slices.Sort(names)
	f := fleet{}
	add := func(d *prometheus.Desc, v float64, labels ...string) {
		f.metrics = append(f.metrics, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	for _, n := range names {
		c := cols[n]
		for rank, byState := range c.spores {
			for j, e := range policy.Derived {
				add(descSpores, float64(byState[j]), n, string(rank), string(e))
			}
		}
		add(descOutbox, float64(c.pending), n)
		add(descHeld, float64(c.held), n)
		add(descOverBudget, float64(c.over), n)
		age := 0.0
		if c.pending > 0 {
			age = max(now.Sub(c.oldest).Seconds(), 0)
		}
		add(descOutboxAge, age, n)
		add(descLag, float64(c.lag), n)
		add(descLagging, float64(c.lagging), n)
		add(descTokens, float64(c.in), n, "input")
		add(descTokens, float64(c.out), n, "output")
		add(descCost, float64(c.micros)/1e6, n)
	}
	observed := 1.0
	if out.ObserveErr != nil {
		observed = 0
	}
	add(descObserved, observed)
	add(descOrphans, float64(len(out.Orphans)))
	return f
}
