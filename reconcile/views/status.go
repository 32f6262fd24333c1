package views

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// effectiveOrder is the order of the count line; states a newer reconcile
// may add come after these, by name.
var effectiveOrder = []policy.Health{
	policy.Healthy, policy.Dead, policy.Diverged, policy.Suspect,
	policy.Blocked, policy.Error, policy.Paused, policy.Stopped,
}

// statusMarkdown renders STATUS.md: the count line, then one table per
// colony (colonies by name), spores that need attention first and marked
// ⚠, then the orphans. Every value from the store or the pass is escaped
// for Markdown (a "|" cannot add a column, a newline cannot end a row,
// "<" cannot open HTML).
func statusMarkdown(f fleetFile) []byte {
	var b strings.Builder
	spores := f.Spores
	b.WriteString("# Fleet status\n\n")
	b.WriteString("Projected by sporectl from its last pass over the whole fleet; it is rebuilt, never edited.\n\n")
	b.WriteString(countLine(spores, len(f.Orphans)) + "\n")

	byColony := map[string][]fleetSpore{}
	for _, s := range spores {
		byColony[s.Colony] = append(byColony[s.Colony], s)
	}
	for _, colony := range sortedKeys(byColony) {
		group := byColony[colony]
		// Needs attention first; then by id (the group is sorted already).
		slices.SortStableFunc(group, func(a, b fleetSpore) int {
			return boolCmp(!policy.OK(a.Effective), !policy.OK(b.Effective))
		})
		name := "(no colony)"
		if colony != "" {
			name = "Colony " + transcript.EscapeMarkdown(colony)
		}
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		b.WriteString("| | spore | rank | desired | effective | pod · bridge · activity | restarts | reason | last seq | pending |\n")
		b.WriteString("|---|---|---|---|---|---|--:|---|--:|--:|\n")
		for _, s := range group {
			mark := ""
			if !policy.OK(s.Effective) {
				mark = "⚠"
			}
			cells := []string{
				mark,
				cell(s.ID) + swarmOf(s),
				cell(string(s.Rank)),
				cell(string(s.Desired)),
				"**" + cell(string(s.Effective)) + "**",
				observed(s.Observed),
				strconv.Itoa(s.Observed.Restarts),
				reason(s),
				strconv.FormatUint(s.LastSeq, 10),
				strconv.Itoa(s.Pending),
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	if len(f.Orphans) > 0 {
		b.WriteString("\n## Orphans\n\nRuntime objects marked as sporectl's with no spore in the store (`sporectl delete --orphan ID` removes one):\n\n")
		for _, o := range f.Orphans {
			b.WriteString("- " + cell(o) + "\n")
		}
	}
	return []byte(b.String())
}

// countLine: "3 Healthy · 1 Dead · 2 Paused".
func countLine(spores []fleetSpore, orphans int) string {
	if len(spores) == 0 {
		s := "No spores."
		if orphans > 0 {
			s += fmt.Sprintf(" %d orphaned runtime objects.", orphans)
		}
		return s
	}
	n := map[policy.Health]int{}
	for _, s := range spores {
		n[s.Effective]++
	}
	var parts []string
	for _, e := range effectiveOrder {
		if n[e] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[e], e))
			delete(n, e)
		}
	}
	for _, e := range sortedKeys(n) {
		parts = append(parts, fmt.Sprintf("%d %s", n[e], cell(string(e))))
	}
	if orphans > 0 {
		parts = append(parts, fmt.Sprintf("%d orphaned", orphans))
	}
	return strings.Join(parts, " · ")
}

// cell escapes a value for a table cell; an empty one shows as "–".
func cell(s string) string {
	if s == "" {
		return "–"
	}
	return transcript.EscapeMarkdown(s)
}

func swarmOf(s fleetSpore) string {
	if s.Swarm == "" {
		return ""
	}
	w := " (swarm " + transcript.EscapeMarkdown(s.Swarm)
	if s.Role != "" {
		w += ", " + transcript.EscapeMarkdown(s.Role)
	}
	return w + ")"
}

func observed(o fleetObserved) string {
	act := string(o.Activity)
	if act == "" {
		act = "–"
	}
	return cell(string(o.Pod)) + " · " + cell(string(o.Bridge)) + " · " + transcript.EscapeMarkdown(act)
}

// reason: the sentence, then the stable code and the observed reason
// where they say something the sentence does not.
func reason(s fleetSpore) string {
	var extra []string
	if s.Code != "" && string(s.Code) != s.Reason {
		extra = append(extra, string(s.Code))
	}
	if o := s.Observed.Reason; o != "" && o != s.Code && string(o) != s.Reason {
		extra = append(extra, "observed "+string(o))
	}
	r := transcript.EscapeMarkdown(s.Reason)
	if len(extra) > 0 {
		x := transcript.EscapeMarkdown(strings.Join(extra, ", "))
		if r == "" {
			return x
		}
		return r + " (" + x + ")"
	}
	if r == "" {
		return "–"
	}
	return r
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
