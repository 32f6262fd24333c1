package outbox

import (
	"context"
	"errors"
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
//     window (state.Tx.FindAction: an index lookup, whatever the agent
//     lines after it): recorded and delivered, since an entry leaves the
//     outbox only once delivered.
//
// Either way nothing is written and Sent.Duplicate is set. Once.Check
// comes before both.
func SendOnce(ctx context.Context, st state.Store, m Message, o Once, now time.Time) (Sent, error) {
	var out Sent
	err := st.Update(ctx, func(tx state.Tx) (err error) {
		out, err = SendOnceIn(ctx, tx, m, o, now)
		return err
	})
	if err != nil {
		return Sent{}, err
	}
	return out, nil
}

// SendOnceIn is SendOnce inside the caller's Update, for a caller that
// records several messages in one transaction (serve's group commit:
// the sends that arrive while one is being recorded share the next
// transaction). Each is judged and recorded as SendOnce would, in the
// order called, each seeing what the ones before it wrote. Its error
// may leave some of its writes in tx: the caller then rolls the whole
// transaction back, and nothing it recorded may be acknowledged.
// A caller that takes every message's locks first (tx.LockSpores of
// all their targets and senders, in one call) makes SendOnceIn's own
// call of it a no-op.
func SendOnceIn(ctx context.Context, tx state.Tx, m Message, o Once, now time.Time) (Sent, error) {
	now = now.UTC()
	entryID, window := o.ID, o.Window
	if entryID == "" {
		return Sent{}, fmt.Errorf("send to %s: the idempotency key is empty", m.To)
	}
	entry := m.entry(entryID, now)
	if o.Sender != "" {
		// The target's outbox and the sender's log are both
		// written: their locks first, in the store's order.
		if err := tx.LockSpores(ctx, []string{m.To, o.Sender}); err != nil {
			return Sent{}, err
		}
	}
	sp, err := tx.Spore(ctx, m.To)
	if o.Check != nil && (err == nil || errors.Is(err, state.ErrNotFound)) {
		if err := o.Check(sp, err == nil); err != nil {
			return Sent{}, err
		}
	}
	if err != nil {
		return Sent{}, err
	}
	queued, err := tx.Outbox(ctx, m.To)
	if err != nil {
		return Sent{}, err
	}
	for _, e := range queued {
		if e.ID == entryID {
			return Sent{Entry: e, Duplicate: true, Pending: true}, o.then(ctx, tx, sp)
		}
	}
	if ev, ok, err := tx.FindAction(ctx, m.To, m.kind(), entryID, now.Add(-window)); err != nil {
		return Sent{}, err
	} else if ok {
		e := entry
		e.At = ev.At
		return Sent{Entry: e, Duplicate: true}, nil
	}
	r, err := record(ctx, tx, sp, m, &entry, how{once: o, action: entryID, report: true}, now)
	if err != nil {
		return Sent{}, err
	}
	out := Sent{Entry: entry, Pending: true, Woke: r.woke, Held: r.held}
	if r.held != "" {
		return out, nil // it waits for the budget: nothing to deliver
	}
	if r.woke && o.Then != nil {
		// The wake wrote a new wish: the record as it stands now.
		if sp, err = tx.Spore(ctx, m.To); err != nil {
			return Sent{}, err
		}
	}
	return out, o.then(ctx, tx, sp)
}

// Once says how SendOnce recognises a repeat.
type Once struct {
	// ID is the outbox entry's id, the caller's idempotency key.
	ID string
	// Window is how long a delivered message's id is remembered.
	Window time.Duration
	// KeepStopped refuses a target whose desired state is Stopped, Wake
	// or not (*StoppedError): "off until a person says otherwise", and a
	// message from a spore is not a person.
	KeepStopped bool
	// Sender, when set, is the spore that sends: its own log records each
	// message it sends (a "sent" lifecycle event naming the entry and the
	// target), in the same transaction. With Limit > 0 it may send at most
	// Limit messages in any Per; one more is a *RateLimitError. Counted
	// from the store, so the limit holds for any number of senders
	// (serve replicas) at once; a repeat is not counted.
	Sender string
	Limit  int
	Per    time.Duration
	// Check, when set, judges the target as this transaction reads it,
	// before anything else is read or written (found: it exists; sp is
	// then its record): serve's reach, so a tell reads its target once
	// for its reach and its send. Its error refuses the send, a repeat
	// too; nil lets it go on (a target not found is then ErrNotFound).
	Check func(sp state.Spore, found bool) error
	// Then, when set, runs last in the transaction, when the entry is in
	// the outbox to be delivered (recorded now and not held for a budget,
	// or recorded before and still queued), with the target's record as
	// it stands there: what the caller reads there (serve: its delivery
	// pass's snapshot, reconcile.LoadIn) costs no read of that record
	// of its own. Its error undoes the send.
	Then func(ctx context.Context, tx state.Tx, sp state.Spore) error
}

func (o Once) then(ctx context.Context, tx state.Tx, sp state.Spore) error {
	if o.Then == nil {
		return nil
	}
	return o.Then(ctx, tx, sp)
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
	// Held is the budget the target is over ("24/20 tokens today"): the
	// entry waits in its outbox for the next UTC day or a raised budget
	// (docs/budgets.md); "" when it is delivered as usual.
	Held string
}
