package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The sender's bound on summonses (docs/mycologists.md "A sender's limit
// and coalescing"): every summons is charged to the spore whose
// incident raises it, its sender (Summons.Sender, else By), so that no
// spore can make a mycologist run turns without end:
//
//   - what one call of summonOn finds for one sender (a pass's lines, a
//     report) is one summons per family of incidents (failed pushes and
//     deploys, collisions, budgets: what their keys start with): several
//     are coalesced into one message that counts them by kind and
//     quotes the latest;
//   - a sender may cause at most SummonsLimit summonses to one mycologist
//     in any SummonsPer. Over it, its incidents raise nothing and their
//     keys are not kept: they are still incidents the next time they are
//     derived (a pass that ingests the sender's next push, deploy,
//     failure or edit; its next failed report), and the first summons
//     after the window counts them all.
//
// The count is kept where the keys are, on the summoned mycologist's
// record (state.Spore.Incidents): one entry "summons:<sender>" per
// summons, dropped SummonsPer after it. It is read again in the
// transaction that records the summons, so it holds for any number of
// passes and serve replicas at once, and costs no read of any log.
const (
	SummonsLimit = 5
	SummonsPer   = time.Hour
)

// senderMarkPrefix starts the Incidents entry that counts one summons
// against its sender's limit: no incident key has this prefix.
const senderMarkPrefix = "summons:"

func senderMark(sender string) string { return senderMarkPrefix + sender }

func isSenderMark(key string) bool { return strings.HasPrefix(key, senderMarkPrefix) }

// sender is whom s is charged to: "" for none (a colony's budget).
func (s Summons) sender() string {
	if s.Sender != "" {
		return s.Sender
	}
	return s.By
}

// summonsSince are the times of sender's summonses recorded in in after
// since, oldest first.
func summonsSince(in []state.Incident, sender string, since time.Time) []time.Time {
	mark := senderMark(sender)
	var out []time.Time
	for _, i := range in {
		if i.Key == mark && i.At.After(since) {
			out = append(out, i.At)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// overLimit reports whether sender has caused SummonsLimit summonses to
// the mycologist whose incidents are in, in the SummonsPer before now.
func overLimit(in []state.Incident, sender string, now time.Time) bool {
	return sender != "" && len(summonsSince(in, sender, now.Add(-SummonsPer))) >= SummonsLimit
}

// outgoing is one summons message to record: the keys it raises, the
// sender it is charged to ("" for none) and its text.
type outgoing struct {
	keys   []string
	sender string
	text   string
}

// planSummonses groups todo (incidents not raised yet) by sender and
// family (what its key starts with: "failed", "collision", "budget"), in
// the order each group first appears, and makes each group one message,
// or none for a sender over its limit (returned in held, once). A
// summons charged to no one is a message of its own.
func planSummonses(in []state.Incident, todo []Summons, now time.Time) (out []outgoing, held []string) {
	type group struct{ sender, family string }
	groups := map[group][]Summons{}
	var order []group
	for _, s := range todo {
		who := s.sender()
		if who == "" {
			out = append(out, outgoing{keys: []string{s.Key}, text: s.Text})
			continue
		}
		family, _, _ := strings.Cut(s.Key, ":")
		g := group{who, family}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], s)
	}
	raised := map[string]int{}
	for _, g := range order {
		who := g.sender
		before := summonsSince(in, who, now.Add(-SummonsPer))
		if len(before)+raised[who] >= SummonsLimit {
			if !slices.Contains(held, who) {
				held = append(held, who)
			}
			continue
		}
		raised[who]++
		o := coalesce(who, groups[g])
		if len(before)+raised[who] == SummonsLimit {
			// This one reaches the limit: say until when the next are held.
			free := now
			if len(before) > 0 {
				free = before[0]
			}
			o.text += fmt.Sprintf(" This is the %d%s summons caused by spore %s in %s, its limit: its incidents until %s raise none; the first summons after that counts them.",
				SummonsLimit, ordinal(SummonsLimit), who, SummonsPer, free.Add(SummonsPer).UTC().Format(time.RFC3339))
		}
		out = append(out, o)
	}
	return out, held
}

// coalesce makes the incidents of one sender one message: a lone one
// as it is, several counted by kind, since the earliest, with the text
// of the latest. Every key is raised, so none of them is raised again.
func coalesce(sender string, ss []Summons) outgoing {
	o := outgoing{sender: sender}
	for _, s := range ss {
		o.keys = append(o.keys, s.Key)
	}
	if len(ss) == 1 {
		o.text = ss[0].Text
		return o
	}
	counts := map[string]int{}
	var kinds []string
	latest, since := ss[0], time.Time{}
	for _, s := range ss {
		kind := s.Kind
		if kind == "" {
			kind = "incident"
		}
		if counts[kind] == 0 {
			kinds = append(kinds, kind)
		}
		counts[kind]++
		if !s.At.IsZero() && (since.IsZero() || s.At.Before(since)) {
			since = s.At
		}
		if !s.At.Before(latest.At) {
			latest = s
		}
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", counts[k], plural(k, counts[k]))
	}
	head := fmt.Sprintf("Spore %s: %s", sender, strings.Join(parts, ", "))
	if !since.IsZero() {
		head += " since " + since.UTC().Format(time.RFC3339)
	}
	o.text = head + ". The latest: " + latest.Text
	return o
}

// plural is kind, an English noun phrase, for n of it.
func plural(kind string, n int) string {
	switch {
	case n == 1:
		return kind
	case strings.HasSuffix(kind, "sh"), strings.HasSuffix(kind, "ch"), strings.HasSuffix(kind, "s"), strings.HasSuffix(kind, "x"):
		return kind + "es"
	default:
		return kind + "s"
	}
}

// ordinal is n's English suffix ("st", "nd", "rd", "th").
func ordinal(n int) string {
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}
