package policy

import (
	"time"

	"github.com/sporectl/sporectl/state"
)

// With the model gateway on (state.Settings.Gateway), the spend budgets
// are judged on is what the gateway counted of each spore's model calls
// (state.GatewayRecord), not what its bridge reports: the agent cannot
// change the gateway's count. The gateway judges each call with Over on
// these before it forwards it.

// CountedSpend is what the gateway counted of sp's model calls on the UTC
// day that holds now.
func CountedSpend(sp state.Spore, now time.Time) state.Spend {
	return sp.GatewayRecord.CountedOn(now).Spend()
}

// CountedColonySpend is what the gateway counted of the model calls of
// colony's spores, over all (every spore of the store), on the UTC day
// that holds now.
func CountedColonySpend(all []state.Spore, colony string, now time.Time) state.Spend {
	var s state.Spend
	for i := range all {
		if all[i].Colony == colony {
			s = s.Add(CountedSpend(all[i], now))
		}
	}
	return s
}
