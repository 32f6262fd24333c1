package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/reconcile/incident"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// The automatic summons (docs/mycologists.md "The automatic summons"):
// the [arch] mycologist is prompted, once per incident, when spores
// collide on a file or a push or deploy fails. Incidents are derived by
// package incident from the store, exactly as `mycologist collisions`
// and `mycologist deploys` show them; a summons is one message recorded
// the way every message is (outbox.Record: an event in the [arch]'s log
// and an entry in its outbox, waking it if it sleeps), together with the
// incident's key in the [arch]'s record (state.Spore.Incidents), in one
// transaction that re-reads that record first. Overlapping passes (and
// serve replicas) therefore raise an incident once: the second finds the
// key.
//
// Where incidents come from, and what that costs:
//
//   - a pass, last in its commit's transaction (so a summons is committed
//     with the lines that raise it, or neither is), looks only at the
//     lines it ingested. When
//     none holds an edit tool call, a Bash push or deploy, or a failed
//     tool result (decided on the lines in memory, a substring test
//     before any parse), it reads nothing more: a pass that ingested
//     nothing (a no-op pass) reads no event at all. Otherwise it reads,
//     in that transaction, the last incident.DefaultWindow of
//     events (at most incident.MaxScanEvents each, from the end of the
//     log) of: for collisions, the spores whose record counts tool calls
//     in the window's hours (state.Spore.Activity) and those that edited
//     in this pass; for failed deploys, only the spores whose ingested
//     lines hold a push, a deploy or a failed result. Only collisions
//     that include a spore that edited in this pass are raised.
//   - a failed `mycologist report push|deploy --failed` is raised by
//     serve in the report's own transaction (SummonReport), since
//     reports are written by serve, not ingested; under its sender's
//     limit it reads the reporter's window for the failures that limit
//     held back, and raises them with it.
//
// Every summons is charged to a sender, and what one step finds for one
// sender is one summons, within that sender's limit (summons_limit.go).
//
// Keys (incident.CollisionKey, incident.DeployKey) are kept for
// IncidentKeep after the summons, twice the window the incidents are
// derived over: a failed deploy's event is out of every later scan by
// then, even when the bridge's clock that stamped it ran ahead of the
// pass's; a collision still going on when its key is dropped (its
// spores still editing the file) is raised again then, as a reminder.
// At most state.MaxIncidents keys are kept, the oldest dropped first.
//
// The [arch] is not summoned about a failed deploy of its own (it saw
// it fail), only about collisions it is part of.
//
// No [arch] mycologist in the store: nothing is raised and nothing is
// kept. Once one is created, a collision still in the window is raised
// by the next pass that ingests an edit of one of its spores, and a
// failed deploy by the next pass that ingests a push, a deploy or a
// failed result of its spore; an earlier failed report only with its
// spore's next failure within the window (`mycologist deploys` still
// shows it).

// SummonsFrom is the sender a summons is recorded with; SummonsMark is
// its mark, the first line of its text.
const (
	SummonsFrom = "sporectl:summons"
	SummonsMark = "[from sporectl: automatic summons]"
)

// IncidentKeep is how long an incident's key is kept after its summons.
const IncidentKeep = 2 * incident.DefaultWindow

// Summons is one incident to raise: its key and the message's text.
type Summons struct {
	Key string
	// Text follows SummonsMark. It quotes what spores wrote (a path, a
	// command, a report), so Summon composes it as every message is
	// (outbox.Compose): a mark-shaped token in it is rewritten.
	Text string
	// By is the one spore whose incident it is (a failed deploy's), ""
	// for several (a collision). The [arch] is not summoned about its own
	// failure: it saw it.
	By string
	// Sender is the spore the summons is charged to (summons_limit.go),
	// when not By: a collision's, the spore whose edit in this pass made
	// it. Neither set: charged to no one.
	Sender string
	// Kind names the incident for a count ("failed push", "collision"),
	// At when it happened: a coalesced summons says how many of each
	// kind since when.
	Kind string
	At   time.Time
}

// CollisionSummons is the summons of a collision.
func CollisionSummons(c incident.Collision) Summons {
	var who, look []string
	for _, fe := range c.Spores {
		edits := "1 edit"
		if fe.Edits != 1 {
			edits = fmt.Sprintf("%d edits", fe.Edits)
		}
		who = append(who, fmt.Sprintf("%s (%s, last at %s)", fe.ID, edits, fe.LastAt.UTC().Format(time.RFC3339)))
		look = append(look, fmt.Sprintf("`mycologist spore %s`", fe.ID))
	}
	text := fmt.Sprintf("Collision: %d spores edited the same file %s in the last %s: %s. "+
		"Look: `mycologist collisions`, %s; steer them with `mycologist tell ID \"…\"`. No answer is expected.",
		len(c.Spores), show(c.Path), incident.DefaultWindow, strings.Join(who, ", "), strings.Join(look, ", "))
	last := c.Spores[0].LastAt
	for _, fe := range c.Spores {
		if fe.LastAt.After(last) {
			last = fe.LastAt
		}
	}
	return Summons{Key: incident.CollisionKey(c), Text: text, Kind: "collision", At: last}
}

// DeploySummons is the summons of a failed push or deploy.
func DeploySummons(d incident.Deploy) Summons {
	what := fmt.Sprintf("its command %s failed", show(d.What))
	if d.Source == incident.SourceReport {
		what = fmt.Sprintf("it reported %s", show(d.What))
	}
	text := fmt.Sprintf("Failed %s: spore %s, at %s (event %d of its log): %s. "+
		"Look: `mycologist deploys`, `mycologist spore %s`; steer it with `mycologist tell %s \"…\"`. No answer is expected.",
		d.Kind, d.Spore, d.At.UTC().Format(time.RFC3339), d.Seq, what, d.Spore, d.Spore)
	return Summons{Key: incident.DeployKey(d), Text: text, By: d.Spore, Kind: "failed " + d.Kind, At: d.At}
}

// maxShown bounds a path or command quoted in a summons.
const maxShown = 300

// show quotes what a tool got (a path, a command) for a prompt: on one
// line, at most maxShown bytes.
func show(s string) string {
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}

// Summon records, inside tx, the summonses of the incidents in ss whose
// keys the [arch] mycologist's record does not hold, with their keys,
// pruned to IncidentKeep and state.MaxIncidents: one message per sender
// (several incidents coalesced), none for a sender over its limit
// (summons_limit.go). arch names it when the caller knows it ("" looks
// it up among every spore). It returns the entries recorded: none when
// there is no [arch], every key is known or every sender is held, and
// then nothing is written.
func Summon(ctx context.Context, tx state.Tx, arch string, ss []Summons, now time.Time) ([]state.OutboxEntry, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	now = now.UTC()
	sp, ok, err := archRecord(ctx, tx, arch)
	if err != nil || !ok {
		return nil, err
	}
	got, err := summonOn(ctx, tx, sp, ss, now)
	return got.Entries, err
}

// Summoned is what a summons step did.
type Summoned struct {
	// Entries are the summonses recorded.
	Entries []state.OutboxEntry
	// Held are the senders over their limit (SummonsLimit) whose
	// incidents raised nothing this time.
	Held []string
}

// SummonReport raises, inside tx (the one that appended the report),
// the failed report d to the [arch] mycologist, with every other failed
// push or deploy of d.Spore in the window not raised yet (those its
// limit held back before): one summons that counts them. Over its
// limit, the report raises nothing and Held names the spore; nothing is
// read past the [arch]'s record then. The [arch]'s own reports raise
// nothing (it knows).
func SummonReport(ctx context.Context, tx state.Tx, d incident.Deploy, now time.Time) (Summoned, error) {
	now = now.UTC()
	sp, ok, err := archRecord(ctx, tx, "")
	if err != nil || !ok || sp.ID == d.Spore {
		return Summoned{}, err
	}
	if overLimit(sp.Incidents, d.Spore, now) {
		return Summoned{Held: []string{d.Spore}}, nil
	}
	evs, _, err := incident.RecentEvents(ctx, tx, d.Spore, now.Add(-incident.DefaultWindow), incident.MaxScanEvents)
	if err != nil {
		return Summoned{}, fmt.Errorf("read the recent events of %s: %w", d.Spore, err)
	}
	var ss []Summons
	seen := false
	for _, f := range incident.Deploys(d.Spore, evs) {
		if f.Failed {
			ss = append(ss, DeploySummons(f))
			seen = seen || f.Seq == d.Seq
		}
	}
	if !seen {
		// Not in the window as the scan saw it (cut by its bound): the
		// report is raised all the same.
		ss = append(ss, DeploySummons(d))
	}
	return summonOn(ctx, tx, sp, ss, now)
}

// summonOn is Summon to sp, as read in tx (the [arch], or a colony
// mycologist a budget summons): the keys and the senders' counts are
// kept on sp's record.
func summonOn(ctx context.Context, tx state.Tx, sp state.Spore, ss []Summons, now time.Time) (Summoned, error) {
	known := map[string]bool{}
	for _, in := range sp.Incidents {
		known[in.Key] = true
	}
	var todo []Summons
	for _, s := range ss {
		if !known[s.Key] && s.By != sp.ID {
			known[s.Key] = true
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return Summoned{}, nil
	}
	msgs, held := planSummonses(sp.Incidents, todo, now)
	res := Summoned{Held: held}
	if len(msgs) == 0 {
		return res, nil
	}
	sp, err := state.UpdateStatus(ctx, tx, sp.ID, func(_ state.Spore, st *state.Status) error {
		for _, o := range msgs {
			for _, k := range o.keys {
				st.Incidents = append(st.Incidents, state.Incident{Key: k, At: now})
			}
			if o.sender != "" {
				st.Incidents = append(st.Incidents, state.Incident{Key: senderMark(o.sender), At: now})
			}
		}
		st.Incidents = pruneIncidents(st.Incidents, now)
		return nil
	})
	if err != nil {
		return Summoned{}, fmt.Errorf("record incidents on %s: %w", sp.ID, err)
	}
	for _, o := range msgs {
		m := outbox.Message{To: sp.ID, From: SummonsFrom, Kind: state.KindMessage, Mark: SummonsMark, Text: o.text, Wake: true}
		r, err := outbox.Record(ctx, tx, sp, m, outbox.NewMessageID(), now)
		if err != nil {
			return Summoned{}, fmt.Errorf("record the summons %s for %s: %w", o.keys[0], sp.ID, err)
		}
		if r.Woke {
			// Record wrote the woken record; the next message sees it.
			var err error
			if sp, err = tx.Spore(ctx, sp.ID); err != nil {
				return Summoned{}, err
			}
		}
		res.Entries = append(res.Entries, r.Entry)
	}
	return res, nil
}

// archRecord reads the [arch] mycologist's record inside tx: the named
// one when it still is the [arch], else the first found among every
// spore (create keeps it to one).
func archRecord(ctx context.Context, tx state.Tx, id string) (state.Spore, bool, error) {
	if id != "" {
		sp, err := tx.Spore(ctx, id)
		switch {
		case err == nil && policy.IsArch(sp.Rank):
			return sp, true, nil
		case err != nil && !errors.Is(err, state.ErrNotFound):
			return state.Spore{}, false, fmt.Errorf("read the [arch] mycologist %s: %w", id, err)
		}
	}
	all, err := tx.Spores(ctx)
	if _, err = state.Damaged(err); err != nil { // a damaged record is no [arch] to summon
		return state.Spore{}, false, fmt.Errorf("find the [arch] mycologist: %w", err)
	}
	for _, sp := range all {
		if policy.IsArch(sp.Rank) {
			return sp, true, nil
		}
	}
	return state.Spore{}, false, nil
}

// pruneIncidents drops keys older than IncidentKeep and senders' counts
// older than SummonsPer, then the oldest past state.MaxIncidents.
func pruneIncidents(in []state.Incident, now time.Time) []state.Incident {
	cutoff, counted := now.Add(-IncidentKeep), now.Add(-SummonsPer)
	out := slices.DeleteFunc(slices.Clone(in), func(i state.Incident) bool {
		if isSenderMark(i.Key) {
			return !i.At.After(counted)
		}
		return i.At.Before(cutoff)
	})
	slices.SortStableFunc(out, func(a, b state.Incident) int { return a.At.Compare(b.At) })
	if len(out) > state.MaxIncidents {
		out = out[len(out)-state.MaxIncidents:]
	}
	return out
}

// summon is the last step of the pass's commit, in its transaction: the
// incidents the lines it ingested may have made, raised once each (see
// above for what it reads). Being in the transaction that appends the
// lines, a summons is never lost between the two: either both are
// committed or neither is, and the next pass ingests the lines again.
func (ps *Pass) summon(ctx context.Context, tx state.Tx, snap *Snapshot, got map[string]*ingested, now time.Time) ([]state.OutboxEntry, error) {
	editors, deployers := map[string]bool{}, map[string]bool{}
	for id, in := range got {
		if in == nil || len(in.events) == 0 {
			continue
		}
		t := incident.Touches(in.events)
		if t.Edits {
			editors[id] = true
		}
		if t.Deploys {
			deployers[id] = true
		}
	}
	if len(editors) == 0 && len(deployers) == 0 {
		return nil, nil
	}
	since := now.Add(-incident.DefaultWindow)
	var ss []Summons
	arch := ""
	err := func() error {
		spores := snap.Spores
		if snap.Named {
			// A pass over named spores: collisions are with any spore.
			var err error
			spores, err = tx.Spores(ctx)
			if _, err = state.Damaged(err); err != nil {
				return err
			}
		}
		edits := incident.NewEdits()
		for _, sp := range spores {
			if policy.IsArch(sp.Rank) && arch == "" {
				arch = sp.ID
			}
			if !editors[sp.ID] && !deployers[sp.ID] && !(len(editors) > 0 && toolCallsSince(sp, since)) {
				continue
			}
			evs, _, err := incident.RecentEvents(ctx, tx, sp.ID, since, incident.MaxScanEvents)
			if errors.Is(err, state.ErrNotFound) {
				continue // deleted since
			}
			if _, ok := state.SporeDamage(err); ok {
				continue // its damage is its own: judged by the pass
			}
			if err != nil {
				return fmt.Errorf("read the recent events of %s: %w", sp.ID, err)
			}
			if len(editors) > 0 {
				edits.Add(sp.ID, evs)
			}
			if deployers[sp.ID] {
				for _, d := range incident.Deploys(sp.ID, evs) {
					if d.Failed {
						ss = append(ss, DeploySummons(d))
					}
				}
			}
		}
		for _, c := range edits.Collisions() {
			if by := collisionSender(c, editors); by != "" {
				s := CollisionSummons(c)
				s.Sender = by
				ss = append(ss, s)
			}
		}
		return nil
	}()
	if err != nil || len(ss) == 0 || arch == "" {
		// No [arch] among every spore: nothing to raise, nothing written.
		return nil, err
	}
	return Summon(ctx, tx, arch, ss, now)
}

// collisionSender is the spore a collision's summons is charged to:
// of its spores that edited in this pass, the one whose edit of the file
// is the latest (the first by id among equals); "" when none did.
func collisionSender(c incident.Collision, editors map[string]bool) string {
	by, last := "", time.Time{}
	for _, fe := range c.Spores {
		if editors[fe.ID] && (by == "" || fe.LastAt.After(last)) {
			by, last = fe.ID, fe.LastAt
		}
	}
	return by
}

// toolCallsSince reports whether sp's record counts tool calls in an
// hour that ends after since (its Activity, kept by the commit that
// ingests its lines): only such a spore can have edited a file since.
func toolCallsSince(sp state.Spore, since time.Time) bool {
	for i := len(sp.Activity) - 1; i >= 0; i-- {
		h := sp.Activity[i]
		if !h.Hour.Add(time.Hour).After(since) {
			return false
		}
		if h.ToolCalls > 0 {
			return true
		}
	}
	return false
}
