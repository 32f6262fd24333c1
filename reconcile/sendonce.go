package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// SendOnce is Send for a sender that may say the same thing twice: a
// client of `serve` that retries because serve died before answering
// (docs/mycologists.md "Retries and idempotency"). The caller names the
// outbox entry's id (derived from its request id), and the message event
// in the target's log carries it as its Action, so a repeat is recognised
// in the same transaction that would record it:
//
//   - an entry with that id still in the target's outbox: the message is
//     recorded and not yet delivered;
//   - a message event with that id in the target's log no older than
//     window (read from the end of the log, at most MaxSendOnceScan
//     events): recorded and delivered, since an entry leaves the outbox
//     only once delivered.
//
// Either way nothing is written and Sent.Duplicate is set.
func SendOnce(ctx context.Context, st state.Store, m Message, entryID string, window time.Duration, now time.Time) (Sent, error) {
	now = now.UTC()
	if entryID == "" {
		return Sent{}, fmt.Errorf("send to %s: the idempotency key is empty", m.To)
	}
	kind := m.Kind
	if kind == "" {
		kind = state.KindPrompt
	}
	entry := state.OutboxEntry{ID: entryID, Spore: m.To, From: m.From, Text: m.Text, At: now, Wake: m.Wake}
	var out Sent
	err := st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, m.To)
		if err != nil {
			return err
		}
		queued, err := tx.Outbox(ctx, m.To)
		if err != nil {
			return err
		}
		for _, e := range queued {
			if e.ID == entryID {
				out = Sent{Entry: e, Duplicate: true, Pending: true}
				return nil
			}
		}
		if ev, ok, err := findSent(ctx, tx, m.To, kind, entryID, now.Add(-window)); err != nil {
			return err
		} else if ok {
			e := entry
			e.At = ev.At
			out = Sent{Entry: e, Duplicate: true}
			return nil
		}
		var evs []state.Event
		if sp.Desired != state.Running {
			if !m.Wake {
				return &AsleepError{ID: m.To, Desired: sp.Desired}
			}
			prev := sp.Desired
			sp.Desired, sp.Updated = state.Running, now
			sp.Generation++
			if err := tx.UpdateSpore(ctx, sp); err != nil {
				return err
			}
			evs = append(evs, state.Event{Kind: state.KindLifecycle, Action: "wake", At: now, Text: fmt.Sprintf("desired %s → Running, to deliver %s", prev, entry.ID)})
			out.Woke = true
		}
		evs = append(evs, state.Event{Kind: kind, Action: entryID, From: m.From, At: now, Text: m.Text})
		if _, err := tx.Append(ctx, m.To, evs); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, entry); err != nil {
			return err
		}
		out.Entry, out.Pending = entry, true
		return nil
	})
	if err != nil {
		return Sent{}, err
	}
	return out, nil
}

// Sent is what SendOnce did.
type Sent struct {
	Entry state.OutboxEntry
	// Duplicate: the message had been recorded before; nothing was written.
	Duplicate bool
	// Pending: the entry is in the outbox (not yet delivered).
	Pending bool
	// Woke: this send set the sleeping target's desired state to Running.
	Woke bool
}

// MaxSendOnceScan bounds how many of the target's last events SendOnce
// reads to recognise a repeat whose entry was delivered already.
const MaxSendOnceScan = 4096

// findSent looks for a kind event whose Action is id among id's last
// events, back to since.
func findSent(ctx context.Context, tx state.Tx, spore string, kind state.EventKind, id string, since time.Time) (state.Event, bool, error) {
	for n := 64; ; n *= 8 {
		n = min(n, MaxSendOnceScan)
		evs, err := tx.Tail(ctx, spore, n)
		if err != nil {
			return state.Event{}, false, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Kind == kind && evs[i].Action == id {
				return evs[i], true, nil
			}
		}
		if len(evs) < n || n == MaxSendOnceScan || (len(evs) > 0 && evs[0].At.Before(since)) {
			return state.Event{}, false, nil
		}
	}
}
