package outbox

import (
	"context"
	"time"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// A message is one transaction on the store plus a delivery: this
// package records it (an event in the target's log and an entry in its
// outbox), the pass delivers it (reconcile's Pass.Deliver). Every sender
// — a person's `prompt` and the page's prompt box (Send), the messages
// between spores that `serve` accepts (SendOnce), a swarm loop's prompt
// and a summons (Record, in the pass's transaction) — goes through
// record, so none lives only in a process and each is admitted once.

// Send records m in one transaction and returns its outbox entry. A
// target over its budget gets the entry all the same, and Send answers
// *OverBudgetError.
func Send(ctx context.Context, st state.Store, m Message, now time.Time) (state.OutboxEntry, error) {
	now = now.UTC()
	entry := m.entry(NewMessageID(), now)
	var held string
	err := st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, m.To)
		if err != nil {
			return err
		}
		r, err := record(ctx, tx, sp, m, &entry, how{report: true}, now)
		held = r.held
		return err
	})
	if err == nil && held != "" {
		// Recorded, and committed: it waits for the budget.
		return entry, &OverBudgetError{ID: m.To, Over: held, Entry: entry.ID}
	}
	return entry, err
}

// Recorded is what Record wrote.
type Recorded struct {
	Entry state.OutboxEntry
	// Woke: the target was asleep and is now wished Running (its record
	// was written: read it again to record more on it).
	Woke bool
	// Seq is the message event's number in the target's log.
	Seq uint64
}

// Record records m inside tx, to sp as read in tx, under the entry id id
// that its event names (its Action): for what sporectl sends inside a
// transaction of its own (a summons, a swarm loop's prompt). id is
// NewMessageID's, or the id of the entry a pass showed on its snapshot
// before recording it (a loop prompt: act delivers that entry). Whether
// the entry waits for the target's budget is not said: the pass holds it.
func Record(ctx context.Context, tx state.Tx, sp state.Spore, m Message, id string, now time.Time) (Recorded, error) {
	entry := m.entry(id, now)
	r, err := record(ctx, tx, sp, m, &entry, how{action: entry.ID}, now)
	if err != nil {
		return Recorded{}, err
	}
	return Recorded{Entry: entry, Woke: r.woke, Seq: r.seq}, nil
}

// how is what a sender asks of record beyond the message.
type how struct {
	// once is SendOnce's: a stopped target refused (KeepStopped), the
	// sending spore charged (Sender, Limit, Per).
	once Once
	// action is the message event's Action: its entry's id, so a repeat
	// is recognised (state.Tx.FindAction); "" for a person's prompt.
	action string
	// report: the caller tells its sender whether the entry waits for the
	// target's budget (held). Without it the budget is judged only where
	// it decides a wake.
	report bool
}

// recorded is what record did.
type recorded struct {
	woke bool
	// held is the budget the target is over when the entry waits for it
	// (not marked OverBudget), "" otherwise.
	held string
	seq  uint64
}

// record writes m inside tx, to sp as read in tx, in this order, each
// refusal leaving nothing written:
//
//   - refused with *StoppedError when sp is stopped and h.once keeps it so;
//   - admitted (admit), else refused with *AsleepError;
//   - charged to its sending spore (h.once.Sender: its rate limit, else
//     *RateLimitError, and a "sent" event in its log);
//   - refused with *TooLargeError when its framed text is over a bridge's
//     bound;
//   - held when sp is over its budget (OverBudgetNow) and the entry is not
//     marked OverBudget; else, sleeping, woken to deliver it
//     (wish.WakeToDeliver: desired Running, a new generation, an event). A
//     spore a budget put to sleep is woken only when within budget, or
//     for an entry marked OverBudget (else the pass wakes it once within
//     budget);
//   - its event (Action h.action, the entry's text) and its outbox entry,
//     marked Wake when it woke sp.
func record(ctx context.Context, tx state.Tx, sp state.Spore, m Message, entry *state.OutboxEntry, h how, now time.Time) (recorded, error) {
	var out recorded
	if sp.Desired == state.Stopped && h.once.KeepStopped {
		return out, &StoppedError{ID: m.To}
	}
	ok, err := admit(ctx, tx, sp, m)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, &AsleepError{ID: m.To, Desired: sp.Desired}
	}
	if h.once.Sender != "" {
		if err := charge(ctx, tx, h.once, m.To, now); err != nil {
			return out, err
		}
	}
	if e := checkFramed(m, entry.Text); e != nil {
		return out, e
	}
	if h.report || sp.Desired != state.Running {
		over, err := OverBudgetNow(ctx, tx, sp, now)
		if err != nil {
			return out, err
		}
		if over != "" && !entry.OverBudget {
			out.held = over
		}
	}
	if out.held == "" {
		if out.woke, err = wish.WakeToDeliver(ctx, tx, sp, entry.ID, now); err != nil {
			return out, err
		}
	}
	// Followed until delivered by whoever recorded it (prompt, serve),
	// as a --wake is.
	entry.Wake = entry.Wake || out.woke
	appended, err := tx.Append(ctx, m.To, []state.Event{{Kind: m.kind(), Action: h.action, From: m.From, At: now, Text: entry.Text}})
	if err != nil {
		return out, err
	}
	out.seq = appended[len(appended)-1].Seq
	_, err = tx.Enqueue(ctx, *entry)
	return out, err
}
