package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// The usage incident (docs/budgets.md "The agent's report and the
// count"): with the model gateway on, budgets judge what the gateway
// counted of a spore's model calls, and what its agent reports is its
// own account, shown beside the count. The two should agree: a report
// above the count is usage the gateway never saw (a model reached some
// other way, or a forged report), one below it calls the report hides.
// A healing pass compares them for each spore whose turn has ended, and
// beyond policy.UsageDiffers's tolerance summons the [arch] mycologist,
// once per spore per UTC day (UsageKey), in the transaction that records
// what the pass decided (decided.go), through the summons path the
// budget's sleeps take (Summon, summonOn).
//
// Only a turn that has ended is compared: the gateway counts each call
// as it is answered, the agent reports a turn's usage in its last line.
// So the bridge is up, idle, with nothing queued, and every line it
// holds is in the store after this pass's ingest. And only when the
// snapshot holds the [arch]'s record, whose incident keys say whether
// this day's summons was raised: a pass over the whole fleet always
// does, one over named spores may not (the next whole pass compares
// then), so a difference that lasts all day costs no write after its
// summons.

// UsageKey is the incident key of a spore's usage summons on day: once
// per spore per UTC day.
func UsageKey(id string, day time.Time) string {
	return "usage:" + id + ":" + day.Format(time.DateOnly)
}

// usageToRaise is, for a healing pass with the gateway on, the plans
// whose spore's turn has ended and whose agent's report of today's
// tokens and the gateway's count differ beyond the tolerance on the
// snapshot, with no summons raised for it today; arch is the [arch]
// mycologist's id, "" when there is none to summon (or it is not in the
// snapshot).
func usageToRaise(snap *Snapshot, plans []*SporePlan, in PlanInput) (todo []*SporePlan, arch string) {
	if !in.Heal || !in.Settings.Gateway() {
		return nil, ""
	}
	var known map[string]bool
	for _, sp := range snap.All {
		if policy.IsArch(sp.Rank) {
			arch, known = sp.ID, map[string]bool{}
			for _, i := range sp.Incidents {
				known[i.Key] = true
			}
			break
		}
	}
	if arch == "" {
		return nil, ""
	}
	key := func(id string) string { return UsageKey(id, state.Day(in.Now)) }
	for _, p := range plans {
		if p.Unreadable || p.Observed.Damage != "" || !turnEnded(p) || known[key(p.Spore.ID)] {
			continue
		}
		if _, _, differ := usageOf(p.Spore, p.Ingest.spend(), in.Now); differ {
			todo = append(todo, p)
		}
	}
	return todo, arch
}

// turnEnded reports whether p's spore has ended its turn with all its
// lines in the store: its bridge answered idle with nothing queued, and
// this pass ingested up to its last line.
func turnEnded(p *SporePlan) bool {
	if p.Observed.Bridge != BridgeUp || p.Observed.Activity != bridge.StateIdle || p.Observed.Queue > 0 {
		return false
	}
	if p.Ingest != nil && (p.Ingest.problem != "" || p.Ingest.err != nil) {
		return false
	}
	behind, ok := p.Behind()
	return ok && behind == 0
}

// usageOf is what sp's agent reported of today's tokens (extra: what the
// pass ingested and its record does not hold yet) and what the gateway
// counted, and whether they differ beyond the tolerance.
func usageOf(sp state.Spore, extra state.Spend, now time.Time) (reported, counted int64, differ bool) {
	reported = policy.ReportedSpend(sp, now, extra).Tokens
	counted = sp.CountedOn(now).Spend().Tokens
	return reported, counted, policy.UsageDiffers(reported, counted)
}

// recordUsage summons, inside tx, the [arch] mycologist arch about each
// spore of todo whose report and count still differ on its record read
// again (the gateway counts calls between the snapshot and now). A
// record whose lines another pass ingested meanwhile (its BridgeSeq
// moved) is left to the next pass: this one's lines would count twice.
func (ps *Pass) recordUsage(ctx context.Context, tx state.Tx, todo []*SporePlan, arch string, now time.Time) error {
	var ss []Summons
	for _, p := range todo {
		sp, err := tx.Spore(ctx, p.Spore.ID)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s to compare its usage: %w", p.Spore.ID, err)
		}
		if sp.BridgeSeq != p.Spore.BridgeSeq {
			continue
		}
		reported, counted, differ := usageOf(sp, p.Ingest.spend(), now)
		if !differ {
			continue
		}
		ps.logger().Info("usage: the agent's report and the gateway's count differ", "spore", sp.ID, "reported_tokens", reported, "counted_tokens", counted)
		ss = append(ss, Summons{Key: UsageKey(sp.ID, state.Day(now)), By: sp.ID, Text: usageText(sp.ID, reported, counted, now)})
	}
	// Summon reads the [arch]'s record again here: one deleted or
	// replaced since the snapshot is looked up afresh, none is no summons.
	if _, err := Summon(ctx, tx, arch, ss, now); err != nil {
		return fmt.Errorf("record usage summonses: %w", err)
	}
	return nil
}

// usageText is the summons of a spore whose report and count differ.
func usageText(id string, reported, counted int64, now time.Time) string {
	return fmt.Sprintf(
		"Usage: spore %s's agent reported %d tokens today (%s UTC), and the model gateway counted %d tokens of its model calls; they differ by more than a quarter and more than %d tokens (docs/budgets.md). Budgets judge the gateway's count. A report above the count is usage the gateway never saw (a model reached another way, or a forged report); below it, calls the report leaves out. Look: `mycologist spore %s`. No answer is expected.",
		id, reported, state.Day(now).Format(time.DateOnly), counted, policy.UsageToleranceTokens, id)
}
