package policy

import (
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Budgets (docs/budgets.md): a spore's own daily budget, and its
// colony's over all the colony's spores, over the UTC day. What a spore
// spent is, with the model gateway on (state.Settings.Gateway, the
// default), what serve's gateway counted of its model calls
// (state.GatewayRecord), from the upstream's own answers; with it off
// (the direct mode), the usage its agent reports (state.Spore.Activity,
// by hour), which is all there is then. The agent's report is its own
// word (it runs arbitrary code beside its bridge), so while the gateway
// counts, the report is shown beside the count and compared with it
// (UsageDiffers), never judged. The [arch] mycologist is never over a
// budget (AlwaysOn), though its spend counts in its colony's. Reading the
// records is the caller's; the sum and the judgement are here.

// SpendOf is what sp spent on the UTC day that holds now, as budgets
// judge it under s: with the gateway on, what the gateway counted (extra
// and the agent's lines add nothing to it); off, its agent's report
// (ReportedSpend).
func SpendOf(sp state.Spore, s state.Settings, now time.Time, extra state.Spend) state.Spend {
	if s.Gateway() {
		return CountedSpend(sp, now)
	}
	return ReportedSpend(sp, now, extra)
}

// ReportedSpend is what sp's agent reported it spent on the UTC day that
// holds now: its record's hours, and extra, reported but not in its
// record yet (the lines a pass ingests are added to the record by its
// commit).
func ReportedSpend(sp state.Spore, now time.Time, extra state.Spend) state.Spend {
	return state.SpendOn(sp.Activity, now).Add(extra)
}

// Spends are the spends that budgets are judged on: today's spend of
// each spore with a budget (its own or its colony's), and of each colony
// with a budget, over every spore of the store.
type Spends struct {
	Spore  map[string]state.Spend
	Colony map[string]state.Spend
	// Reported is, with the gateway on, what the agent of each spore of
	// Spore reported today (ReportedSpend): shown beside the count, never
	// judged. Nil with the gateway off, where Spore is the report.
	Reported map[string]state.Spend
}

// CountSpends counts the spends of covered (the spores judged) and of
// the colonies with a budget, over all (every spore of the store), for
// the UTC day of now; extra, when not nil, is a spore's spend not in its
// record yet (asked only of the spores counted). Nothing is counted when no budget is set anywhere: the cost of a fleet
// without budgets is one look at each covered spore.
func CountSpends(covered, all []state.Spore, s state.Settings, now time.Time, extra func(id string) state.Spend) Spends {
	var out Spends
	colonyBudget := func(c string) bool { return !s.Colony(c).Budget.IsZero() }
	for i := range covered {
		sp := &covered[i]
		if sp.Budget.IsZero() && !colonyBudget(sp.Colony) {
			continue
		}
		if out.Spore == nil {
			out.Spore = map[string]state.Spend{}
		}
		x := extraOf(extra, sp.ID)
		out.Spore[sp.ID] = SpendOf(*sp, s, now, x)
		if s.Gateway() {
			if out.Reported == nil {
				out.Reported = map[string]state.Spend{}
			}
			out.Reported[sp.ID] = ReportedSpend(*sp, now, x)
		}
	}
	if s.Colonies == nil {
		return out
	}
	out.Colony = sumColonies(all, s, now, extra, out.Spore, colonyBudget)
	return out
}

// ColonySpends is each colony's spend on the UTC day of now, as budgets
// judge it under s, over all (every spore of the store), whether or not
// it has a budget.
func ColonySpends(all []state.Spore, s state.Settings, now time.Time) map[string]state.Spend {
	return sumColonies(all, s, now, nil, nil, func(string) bool { return true })
}

// sumColonies is the one sum of a colony's spend: its spores' spends,
// those of known taken as they are, for the colonies that count.
func sumColonies(all []state.Spore, settings state.Settings, now time.Time, extra func(string) state.Spend, known map[string]state.Spend, counts func(colony string) bool) map[string]state.Spend {
	var out map[string]state.Spend
	for i := range all {
		sp := &all[i]
		if !counts(sp.Colony) {
			continue
		}
		if out == nil {
			out = map[string]state.Spend{}
		}
		s, ok := known[sp.ID]
		if !ok {
			s = SpendOf(*sp, settings, now, extraOf(extra, sp.ID))
		}
		out[sp.Colony] = out[sp.Colony].Add(s)
	}
	return out
}

func extraOf(extra func(string) state.Spend, id string) state.Spend {
	if extra == nil {
		return state.Spend{}
	}
	return extra(id)
}

// The tolerance between the agent's report of a day's tokens and the
// gateway's count (docs/budgets.md "The agent's report and the count").
// Measured with Claude Code 2.1.328 (`claude -p`, as the bridge runs it)
// against the fake Messages API, a turn's `result` usage is exactly the
// sum of the turn's calls as the gateway counts them (a turn of one
// call, one of two around a Bash tool; no side call was made). What that
// did not exercise can set them apart honestly: a call the result leaves
// out (a small model's, a sub-agent's, one that failed mid-stream and
// was retried: the gateway counts what it passed on), and a turn that
// runs over midnight, counted by the gateway in yesterday's hours and
// reported in today's. A quarter of the day's larger figure is the room
// left for them (not measured: a day of heavy sub-agent work, should
// their calls be missing from the result, could pass it, and the [arch]
// then reads two honest figures); 20,000 tokens, a few calls' worth,
// keeps a small day (one short turn, where one such call is a large
// share) from tripping it.
const (
	UsageTolerancePart   = 4 // a quarter of the larger figure
	UsageToleranceTokens = 20_000
)

// UsageDiffers reports whether a spore's agent's report of its tokens
// over a day (reported) and the gateway's count of them (counted) differ
// beyond the tolerance: by more than a quarter of the larger and by more
// than UsageToleranceTokens. Either way is an incident: a report above
// the count is usage the gateway never saw (a model reached around it,
// or a forged report); below it, calls the report hides.
func UsageDiffers(reported, counted int64) bool {
	d := reported - counted
	if d < 0 {
		d = -d
	}
	return d > UsageToleranceTokens && d > max(reported, counted)/UsageTolerancePart
}

// Reaches reports whether s has reached b: either limit set and met.
func Reaches(s state.Spend, b state.Budget) bool {
	return b.TokensPerDay > 0 && s.Tokens >= b.TokensPerDay ||
		b.CostPerDayMicros > 0 && s.CostMicros >= b.CostPerDayMicros
}

// Over says whether sp has reached a budget: its own (own is its spend
// today) or (colony) its colony's, colonyBudget (colonySpend is the
// colony's spend today); and in words which ("24/20 tokens today",
// "colony lab: $2.10/$2.00 today"). The [arch] is never over.
func Over(sp state.Spore, own state.Spend, colonyBudget state.Budget, colonySpend state.Spend) (over, colony bool, text string) {
	if AlwaysOn(sp) {
		return false, false, ""
	}
	if Reaches(own, sp.Budget) {
		return true, false, SpendText(own, sp.Budget)
	}
	if Reaches(colonySpend, colonyBudget) {
		return true, true, "colony " + sp.Colony + ": " + SpendText(colonySpend, colonyBudget)
	}
	return false, false, ""
}

// SpendText is the limit s reached of b: "24/20 tokens today",
// "$2.10/$2.00 today".
func SpendText(s state.Spend, b state.Budget) string {
	if b.TokensPerDay > 0 && s.Tokens >= b.TokensPerDay {
		return fmt.Sprintf("%d/%d tokens today", s.Tokens, b.TokensPerDay)
	}
	return fmt.Sprintf("%s/%s today", state.CostText(s.CostMicros), state.CostText(b.CostPerDayMicros))
}

// Deliverable are the entries of pending a spore may be given: all of
// them within budget; only those an operator marked over-budget when it
// reached one (over), the others waiting in its outbox.
func Deliverable(pending []state.OutboxEntry, over bool) []state.OutboxEntry {
	if !over {
		return pending
	}
	var out []state.OutboxEntry
	for _, e := range pending {
		if e.OverBudget {
			out = append(out, e)
		}
	}
	return out
}
