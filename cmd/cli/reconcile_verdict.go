package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
)

// attentionShown is how many spores that need attention reconcile's
// summary names before "and K more".
const attentionShown = 5

// newReconcileReport is the report of out at now: the fleet after the
// pass acted, what it did, and which spores need a person
// (policy.NeedsAttention; docs/exit-codes.md, code 3).
func newReconcileReport(out *reconcile.Outcome, now time.Time, dry bool) *reconcileReport {
	res, afters := out.AfterAct(dry)
	rep := &reconcileReport{Result: res, now: now, DryRun: dry, Actions: actionsOf(out.Plans, dry),
		observeErr: out.ObserveErr, missing: out.Missing}
	for i, a := range afters {
		if policy.NeedsAttention(a, now) {
			rep.attention = append(rep.attention, res.Spores[i])
		}
	}
	return rep
}

// verdict is the pass's exit: nil when nothing needs a person; a named
// spore missing (4); else an UnhealthyError (3) whose message names the
// spores that need attention, the orphans and an observation that failed.
// The orphans' warning goes to stderr first.
func (r *reconcileReport) verdict(verb string) error {
	if len(r.Orphans) > 0 {
		fmt.Fprintf(r.errOut, "warning: %d runtime object(s) carry sporectl's marks but no spore in the store has their id: %s (remove with 'sporectl delete --orphan ID')\n",
			len(r.Orphans), strings.Join(r.Orphans, ", "))
	}
	if r.missing != nil {
		return fmt.Errorf("%s: %w", verb, r.missing)
	}
	if msg := r.attentionText(); msg != "" {
		return &UnhealthyError{Msg: verb + ": " + msg}
	}
	return nil
}

// attentionText says what needs a person ("" when nothing does): the
// observation's failure, then the spores by id with their health and
// reason, the first attentionShown of them and how many more, then the
// orphans.
func (r *reconcileReport) attentionText() string {
	var parts []string
	if r.observeErr != nil {
		parts = append(parts, "observation failed: "+r.observeErr.Error())
	}
	if n := len(r.attention); n > 0 {
		names := make([]string, 0, min(n, attentionShown))
		for _, s := range r.attention[:min(n, attentionShown)] {
			what := string(s.Effective)
			if s.Reason != "" {
				what += ": " + s.Reason
			}
			names = append(names, s.ID+" ("+what+")")
		}
		text := fmt.Sprintf("%d of %d spores need attention: %s", n, len(r.Spores), strings.Join(names, ", "))
		if n > attentionShown {
			text += " and " + strconv.Itoa(n-attentionShown) + " more"
		}
		parts = append(parts, text)
	}
	if len(r.Orphans) > 0 {
		parts = append(parts, strconv.Itoa(len(r.Orphans))+" orphan(s)")
	}
	return strings.Join(parts, "; ")
}

// line is the loop's line for one pass that began at at and took took:
// the time, how many spores, what the pass did by kind, how long it took,
// and what needs attention.
func (r *reconcileReport) line(at time.Time, took time.Duration) string {
	counts := map[string]int{}
	var kinds []string
	for _, a := range r.Actions {
		k := a.Action
		if a.Error != "" {
			k += " failed"
		}
		if counts[k] == 0 {
			kinds = append(kinds, k)
		}
		counts[k]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s reconcile: %d spore(s)", at.UTC().Format(time.RFC3339), len(r.Spores))
	for _, k := range kinds {
		fmt.Fprintf(&b, ", %s %d", k, counts[k])
	}
	fmt.Fprintf(&b, " in %.2fs", took.Seconds())
	if msg := r.attentionText(); msg != "" {
		b.WriteString("; " + msg)
	} else {
		b.WriteString("; nothing needs attention")
	}
	return b.String()
}
