package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// A message is one transaction on the store plus a delivery: Send
// records it (an event in the target's log and an entry in its outbox),
// Deliver posts it. Every sender — a person's `prompt`, and the messages
// between spores that `serve` accepts — goes through these two, so none
// lives only in a process.

// ErrAsleep: the target sleeps and the sender did not ask to wake it.
var ErrAsleep = errors.New("the spore is asleep")

// AsleepError says which spore and its desired state; it wraps ErrAsleep.
type AsleepError struct {
	ID      string
	Desired state.Desired
}

func (e *AsleepError) Error() string {
	return fmt.Sprintf("spore %s is asleep (desired %s): nothing was sent; pass --wake to wake it and deliver", e.ID, e.Desired)
}
func (e *AsleepError) Unwrap() error { return ErrAsleep }

// ErrOverBudget: the target reached its budget; the message was queued,
// not delivered (docs/budgets.md).
var ErrOverBudget = errors.New("the spore is over budget")

// OverBudgetError says which spore, which budget it reached and the
// entry that waits in its outbox; it wraps ErrOverBudget. Unlike
// AsleepError, the message was recorded.
type OverBudgetError struct {
	ID    string
	Over  string // "24/20 tokens today", "colony lab: $2.10/$2.00 today"
	Entry string
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("spore %s is over budget (%s): %s is queued and is delivered the next UTC day or once its budget is raised", e.ID, e.Over, e.Entry)
}
func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// Message is what Send records.
type Message struct {
	To   string
	From string // "user:alice", "spore:x", …
	// Kind is state.KindPrompt for a person's prompt, state.KindMessage
	// for one from a spore.
	Kind state.EventKind
	// Mark is the sender's mark, the first line of what the agent reads
	// ("[from spore x]", …): chosen by the sending program from who sent
	// it (serve: the authenticated caller), never from the text. Empty
	// for a person's prompt.
	Mark string
	// Text is the sender's own words; Compose rewrites every mark-shaped
	// token in it.
	Text string
	// Note, when set, follows the text: how to answer, written by the
	// sending program.
	Note string
	// Wake sets desired Running on a sleeping target (with an event);
	// without it a sleeping target is refused with *AsleepError, unless
	// idle put it to sleep and its colony wakes on a message (mayWake).
	Wake bool
	// OverBudget delivers it to a target over its budget (an operator's
	// --over-budget); without it such a target's message is queued and
	// Send answers *OverBudgetError.
	OverBudget bool
}

// mayWake reports whether m may wake sp, asleep: m asks to (--wake), or
// idle put sp to sleep and its colony's WakeOnMessage lets any message
// wake such a spore (docs/sleep.md). A spore a person put to sleep is
// woken only on request.
func mayWake(ctx context.Context, tx state.Tx, sp state.Spore, m Message) (bool, error) {
	if m.Wake {
		return true, nil
	}
	if sp.Desired != state.Paused || sp.DesiredBy != state.ByIdle {
		return false, nil
	}
	s, err := tx.Settings(ctx)
	if err != nil {
		return false, fmt.Errorf("read settings: %w", err)
	}
	return s.Colony(sp.Colony).WakeOnMessage, nil
}

// OverBudgetNow says, inside tx, whether sp has reached its budget or its
// colony's today, in words ("" when not, or for the [arch]): the same
// judgement as a pass's (overBudget), on the record as stored. Send holds
// a message by it; the page's prompt box shows it.
func OverBudgetNow(ctx context.Context, tx state.Tx, sp state.Spore, now time.Time) (string, error) {
	if sp.Rank == state.RankArch {
		return "", nil
	}
	if s := state.SpendOn(sp.Activity, now); s.Reaches(sp.Budget) {
		return spendText(s, sp.Budget), nil
	}
	settings, err := tx.Settings(ctx)
	if err != nil {
		return "", fmt.Errorf("read settings: %w", err)
	}
	b := settings.Colony(sp.Colony).Budget
	if b.IsZero() {
		return "", nil
	}
	all, err := tx.Spores(ctx)
	// A damaged member's spend is unknown: the colony is judged on the
	// rest, as the pass judges it (one spore's damage is its own).
	if _, err = state.Damaged(err); err != nil {
		return "", fmt.Errorf("count colony %s's spend: %w", sp.Colony, err)
	}
	var s state.Spend
	for _, o := range all {
		if o.Colony == sp.Colony {
			s = s.Add(state.SpendOn(o.Activity, now))
		}
	}
	if s.Reaches(b) {
		return "colony " + sp.Colony + ": " + spendText(s, b), nil
	}
	return "", nil
}

// NewMessageID is a fresh outbox id: 96 random bits never repeat in a
// store (crypto/rand does not fail; it would crash the program instead).
func NewMessageID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "p-" + hex.EncodeToString(b)
}

// Send records m in one transaction and returns its outbox entry.
func Send(ctx context.Context, st state.Store, m Message, now time.Time) (state.OutboxEntry, error) {
	now = now.UTC()
	entry := m.entry(NewMessageID(), now)
	var held string
	err := st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, m.To)
		if err != nil {
			return err
		}
		_, held, err = record(ctx, tx, sp, m, &entry, "", now)
		return err
	})
	if err == nil && held != "" {
		// Recorded, and committed: it waits for the budget.
		return entry, &OverBudgetError{ID: m.To, Over: held, Entry: entry.ID}
	}
	return entry, err
}

// entry is m's outbox entry under id: its text is what the agent reads
// (Compose), and the message event keeps the same text.
func (m Message) entry(id string, now time.Time) state.OutboxEntry {
	return state.OutboxEntry{ID: id, Spore: m.To, From: m.From, Text: Compose(m), At: now, Wake: m.Wake, OverBudget: m.OverBudget}
}

// record writes a message inside tx, for Send and SendOnce: refused with
// *TooLargeError when its framed text is over a bridge's bound; a wake
// (wish.WakeToDeliver: desired Running, a new generation, an event) when
// the target sleeps and mayWake allows it, else *AsleepError; the message
// event (its Action the given one, its text entry's); the outbox entry,
// marked Wake when it woke the target. It reports whether it woke it, and
// held: the budget the target is over when the entry waits for it (not
// marked OverBudget). A spore a budget put to sleep takes every message:
// it is woken only when within budget, or for an entry marked OverBudget
// (else the pass wakes it once it is within budget).
func record(ctx context.Context, tx state.Tx, sp state.Spore, m Message, entry *state.OutboxEntry, action string, now time.Time) (woke bool, held string, err error) {
	kind := m.Kind
	if kind == "" {
		kind = state.KindPrompt
	}
	if e := checkFramed(m, entry.Text); e != nil {
		return false, "", e
	}
	byBudget := sp.Desired == state.Paused && sp.DesiredBy == state.ByBudget
	if sp.Desired != state.Running && !byBudget {
		wake, err := mayWake(ctx, tx, sp, m)
		if err != nil {
			return false, "", err
		}
		if !wake {
			return false, "", &AsleepError{ID: m.To, Desired: sp.Desired}
		}
	}
	over, err := OverBudgetNow(ctx, tx, sp, now)
	if err != nil {
		return false, "", err
	}
	if over != "" && !entry.OverBudget {
		held = over
	}
	if held == "" {
		if woke, err = wish.WakeToDeliver(ctx, tx, sp, entry.ID, now); err != nil {
			return false, "", err
		}
	}
	// Followed until delivered by whoever recorded it (prompt, serve),
	// as a --wake is.
	entry.Wake = entry.Wake || woke
	if _, err := tx.Append(ctx, m.To, []state.Event{{Kind: kind, Action: action, From: m.From, At: now, Text: entry.Text}}); err != nil {
		return false, "", err
	}
	_, err = tx.Enqueue(ctx, *entry)
	return woke, held, err
}

// DeliveryResult says what became of one entry after Deliver.
type DeliveryResult struct {
	// State is "delivered", "queued" (the agent is working; Position is
	// its place in the bridge's queue), "waiting" (still in the outbox;
	// Detail says why; the next pass delivers it) or "dead" (the bridge
	// refused it for good: a dead letter now; Detail is the reason).
	State    string
	Position int
	Detail   string
}

// Deliver runs passes over e's spore until e is delivered, or, when wait
// is more than zero (a woken spore coming up), until wait runs out. start
// lets the first pass start the spore (it was just woken).
func (ps *Pass) Deliver(ctx context.Context, e state.OutboxEntry, start bool, wait time.Duration) (DeliveryResult, error) {
	res := DeliveryResult{State: "waiting"}
	deadline := time.Now().Add(wait)
	opt := Options{IDs: []string{e.Spore}, Deliver: true, Heal: start}
	if start {
		opt.Force = []string{e.Spore}
	}
	for {
		out, err := ps.Run(ctx, opt)
		if err != nil {
			return res, err
		}
		if out.Missing != nil {
			return res, out.Missing
		}
		for _, p := range out.Plans {
			if p.StartErr != nil {
				res.Detail = "the spore could not be started: " + p.StartErr.Error()
				return res, nil
			}
			for _, d := range p.Delivered {
				if d.Entry.ID == e.ID && d.Dead != "" {
					res.State, res.Detail = "dead", d.Dead
					return res, nil
				}
				if d.Entry.ID != e.ID || d.Err != nil {
					continue
				}
				res.State, res.Position = "delivered", d.Position
				if d.Position > 0 {
					res.State = "queued"
				}
				return res, nil
			}
			text := p.Verdict.Text
			if text == "" {
				text = "-"
			}
			res.Detail = fmt.Sprintf("%s (%s); the next reconcile delivers it", p.Verdict.Effective, text)
		}
		opt.Heal, opt.Force = false, nil
		if wait <= 0 || time.Now().After(deadline) {
			return res, nil
		}
		if gone, err := ps.delivered(ctx, e); err != nil {
			return res, err
		} else if gone {
			// Another pass (a cron reconcile, serve) delivered it.
			return DeliveryResult{State: "delivered", Detail: "by another pass"}, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// delivered reports whether e has left its spore's outbox.
func (ps *Pass) delivered(ctx context.Context, e state.OutboxEntry) (bool, error) {
	gone := true
	err := ps.Store.View(ctx, func(tx state.Tx) error {
		pending, err := tx.Outbox(ctx, e.Spore)
		for _, p := range pending {
			if p.ID == e.ID {
				gone = false
			}
		}
		return err
	})
	return gone, err
}
