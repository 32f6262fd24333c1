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
	err := st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, m.To)
		if err != nil {
			return err
		}
		_, err = record(ctx, tx, sp, m, &entry, "", now)
		return err
	})
	return entry, err
}

// entry is m's outbox entry under id: its text is what the agent reads
// (Compose), and the message event keeps the same text.
func (m Message) entry(id string, now time.Time) state.OutboxEntry {
	return state.OutboxEntry{ID: id, Spore: m.To, From: m.From, Text: Compose(m), At: now, Wake: m.Wake}
}

// record writes a message inside tx, for Send and SendOnce: a wake
// (wish.WakeToDeliver: desired Running, a new generation, an event) when
// the target sleeps and mayWake allows it, else *AsleepError; the message
// event (its Action the given one, its text entry's); the outbox entry,
// marked Wake when it woke the target. It reports whether it woke it.
func record(ctx context.Context, tx state.Tx, sp state.Spore, m Message, entry *state.OutboxEntry, action string, now time.Time) (woke bool, err error) {
	kind := m.Kind
	if kind == "" {
		kind = state.KindPrompt
	}
	if sp.Desired != state.Running {
		wake, err := mayWake(ctx, tx, sp, m)
		if err != nil {
			return false, err
		}
		if !wake {
			return false, &AsleepError{ID: m.To, Desired: sp.Desired}
		}
	}
	if woke, err = wish.WakeToDeliver(ctx, tx, sp, entry.ID, now); err != nil {
		return false, err
	}
	// Followed until delivered by whoever recorded it (prompt, serve),
	// as a --wake is.
	entry.Wake = entry.Wake || woke
	if _, err := tx.Append(ctx, m.To, []state.Event{{Kind: kind, Action: action, From: m.From, At: now, Text: entry.Text}}); err != nil {
		return false, err
	}
	_, err = tx.Enqueue(ctx, *entry)
	return woke, err
}

// DeliveryResult says what became of one entry after Deliver.
type DeliveryResult struct {
	// State is "delivered", "queued" (the agent is working; Position is
	// its place in the bridge's queue) or "waiting" (still in the outbox;
	// Detail says why; the next pass delivers it).
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
