package pgstore

import (
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// checkValues reports, for check, each column of a spore row that reads
// let through but that no write of sporectl makes: a negative count of
// restarts, a spec quantity that is not one or is not above zero. Each
// problem names the table, the spore and the column. A quantity above
// today's bound is not impossible (a record written before a bound
// changed still reads back: state/specgrammar.go), so it is not one.
// Nor is a model call counted twice: the gateway's count
// (state.GatewayRecord.Count) keeps one entry per call id.
func checkValues(rep *state.CheckReport, sp state.Spore) {
	where := func(column string) string { return "sporectl.spores id=" + sp.ID + " column " + column }
	seen := make(map[string]bool, len(sp.ModelCalls))
	for _, c := range sp.ModelCalls {
		if seen[c.ID] {
			problem(rep, where("model_calls"), "impossible value: call %s is counted twice", quote.Value(c.ID))
		}
		seen[c.ID] = true
	}
	if sp.Restarts < 0 {
		problem(rep, where("restarts"), "impossible value %d: a count of restarts is never negative", sp.Restarts)
	}
	for _, q := range []struct{ column, value string }{
		{"spec_cpu", sp.Spec.CPU}, {"spec_memory", sp.Spec.Memory}, {"spec_storage", sp.Spec.Storage},
	} {
		if q.value == "" {
			continue // the store's default
		}
		// No resource name: the grammar and the sign, without the bound.
		if err := state.CheckQuantity("", q.value); err != nil {
			problem(rep, where(q.column), "impossible value %s: %v", quote.Value(q.value), err)
		}
	}
}
