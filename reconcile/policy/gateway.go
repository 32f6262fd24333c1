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

// GrantFor is how long a person's over-budget prompt lets its spore call
// the model over its budget, from the prompt's delivery: the turn it
// starts. The pass puts the spore back to sleep once that turn ends
// (its desired state then refuses its calls); GrantFor bounds the leave
// when no pass runs.
const GrantFor = time.Hour

// Grant is the end of the leave a person's over-budget prompt delivered
// at now gives its spore (state.GatewayRecord GrantUntil).
func Grant(now time.Time) time.Time { return now.Add(GrantFor) }

// Granted reports whether sp may call the model over its budget at now:
// a person's over-budget prompt was delivered to it within GrantFor.
func Granted(sp state.Spore, now time.Time) bool {
	return now.Before(sp.GrantUntil)
}
