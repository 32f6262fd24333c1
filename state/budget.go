package state

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Budget is a daily limit on what a spore, or a colony's spores together,
// may spend (docs/budgets.md): tokens (input and output) and cost, over
// the UTC day. A zero field is no limit of that kind.
type Budget struct {
	TokensPerDay int64 `json:"tokens_per_day,omitempty"`
	// CostPerDayMicros is in millionths of a US dollar, like
	// HourActivity's CostMicros.
	CostPerDayMicros int64 `json:"cost_per_day_micros,omitempty"`
}

// IsZero reports whether b sets no limit.
func (b Budget) IsZero() bool { return b == Budget{} }

// ValidateBudget refuses a negative limit; field names where it came from
// ("budget", "colonies.NAME.budget").
func ValidateBudget(field string, b Budget) error {
	if b.TokensPerDay < 0 {
		return &InvalidError{Field: field + ".tokens_per_day", Value: fmt.Sprint(b.TokensPerDay), Reason: "must be 0 (no limit) or more"}
	}
	if b.CostPerDayMicros < 0 {
		return &InvalidError{Field: field + ".cost_per_day_micros", Value: fmt.Sprint(b.CostPerDayMicros), Reason: "must be 0 (no limit) or more"}
	}
	return nil
}

// Spend is what was spent over one UTC day.
type Spend struct {
	Tokens     int64 `json:"tokens"`
	CostMicros int64 `json:"cost_micros"`
}

// Text is s in words: "24 tokens, $0.000024".
func (s Spend) Text() string {
	return fmt.Sprintf("%d tokens, %s", s.Tokens, CostText(s.CostMicros))
}

// Text is b's limits in words, the unset ones left out: "20 tokens,
// $5.00", "20 tokens", "none".
func (b Budget) Text() string {
	var parts []string
	if b.TokensPerDay > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.TokensPerDay))
	}
	if b.CostPerDayMicros > 0 {
		parts = append(parts, CostText(b.CostPerDayMicros))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Add is s and o together, each count stopping at the largest int64.
func (s Spend) Add(o Spend) Spend {
	return Spend{Tokens: AddCount(s.Tokens, o.Tokens), CostMicros: AddCount(s.CostMicros, o.CostMicros)}
}

// Day is the UTC day that holds t, at its midnight.
func Day(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// SpendOn is what activity records for the UTC day that holds now: the
// hours from its midnight, tokens in and out together. Activity is kept
// by hour, so a day's spend is exact.
func SpendOn(activity []HourActivity, now time.Time) Spend {
	day := Day(now)
	var s Spend
	// Ascending by hour: the day's hours are at the end.
	for i := len(activity) - 1; i >= 0; i-- {
		a := activity[i]
		if a.Hour.Before(day) {
			break
		}
		if a.Hour.Sub(day) >= 24*time.Hour {
			continue
		}
		s = s.Add(Spend{Tokens: AddCount(a.InputTokens, a.OutputTokens), CostMicros: a.CostMicros})
	}
	return s
}

// StoredOn is the bytes of agent lines activity records as stored on the
// UTC day that holds now (the ingest quota's measure).
func StoredOn(activity []HourActivity, now time.Time) int64 {
	day := Day(now)
	var n int64
	for i := len(activity) - 1; i >= 0; i-- {
		a := activity[i]
		if a.Hour.Before(day) {
			break
		}
		if a.Hour.Sub(day) < 24*time.Hour {
			n = AddCount(n, a.StoredBytes)
		}
	}
	return n
}

// ParseCost reads a cost in US dollars ("0.50", "2") as micros; field
// names where it came from.
func ParseCost(field, s string) (int64, error) {
	usd, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	if err != nil || usd < 0 || math.IsNaN(usd) || usd > float64(math.MaxInt64)/1e6 {
		return 0, &InvalidError{Field: field, Value: preview(s), Reason: "must be a cost in US dollars, 0 (no limit) or more, such as 2.50"}
	}
	return int64(math.Round(usd * 1e6)), nil
}

// CostText is micros as dollars: "$2.50", "$0.000120".
func CostText(micros int64) string {
	if micros%10000 == 0 {
		return fmt.Sprintf("$%.2f", float64(micros)/1e6)
	}
	return fmt.Sprintf("$%.6f", float64(micros)/1e6)
}
