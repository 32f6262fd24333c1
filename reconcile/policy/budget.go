package policy

import (
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Budgets (docs/budgets.md): a spore's own daily budget, and its
// colony's over all the colony's spores, counted from the usage its
// agent reports (state.Spore.Activity, by hour) over the UTC day. The
// [arch] mycologist is never over one (AlwaysOn), though its spend counts
// in its colony's. Reading the records is the caller's; the sum and the
// judgement are here.

// SpendOf is what sp spent on the UTC day that holds now: its record's
// hours, and extra, spent but not in its record yet (the lines a pass
// ingests are added to the record by its commit).
func SpendOf(sp state.Spore, now time.Time, extra state.Spend) state.Spend {
	return state.SpendOn(sp.Activity, now).Add(extra)
}

// Spends are the spends that budgets are judged on: today's spend of
// each spore with a budget (its own or its colony's), and of each colony
// with a budget, over every spore of the store.
type Spends struct {
	Spore  map[string]state.Spend
	Colony map[string]state.Spend
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
		out.Spore[sp.ID] = SpendOf(*sp, now, extraOf(extra, sp.ID))
	}
	if s.Colonies == nil {
		return out
	}
	out.Colony = sumColonies(all, now, extra, out.Spore, colonyBudget)
	return out
}

// ColonySpends is each colony's spend on the UTC day of now, over all
// (every spore of the store), whether or not it has a budget.
func ColonySpends(all []state.Spore, now time.Time) map[string]state.Spend {
	return sumColonies(all, now, nil, nil, func(string) bool { return true })
}

// sumColonies is the one sum of a colony's spend: its spores' spends,
// those of known taken as they are, for the colonies that count.
func sumColonies(all []state.Spore, now time.Time, extra func(string) state.Spend, known map[string]state.Spend, counts func(colony string) bool) map[string]state.Spend {
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
			s = SpendOf(*sp, now, extraOf(extra, sp.ID))
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
