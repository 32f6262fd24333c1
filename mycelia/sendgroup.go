package mycelia

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

// Group commit (docs/postgres.md §5, "Sends recorded together"): the
// sends that arrive while one is being recorded share the next
// transaction. No send waits for company: one that finds none in flight
// is recorded at once, alone, as outbox.SendOnce records it; those that
// queue meanwhile are recorded together when it ends, by one of them
// (the first queued leads), each judged as SendOnce judges it
// (outbox.SendOnceIn: reach, the repeat probe, the rate limit, under the
// locks of every target and sender, taken at once in the store's order),
// in the order they came. A send is answered only once the transaction
// that recorded it committed.
//
// One send's error rolls the group's transaction back: that send is then
// recorded alone (its answer is the one its own transaction gives), and
// the others together once more; a second failure, or one that is not a
// send's own (the COMMIT, the locks, the server gone), records each of
// them alone. A send the rolled-back transaction had recorded is
// recorded again from nothing, and one whose COMMIT went unanswered is
// recognised as a repeat by its id: none is recorded twice.

// maxGroup bounds the sends one transaction records: each holds its
// target's and sender's row locks until the COMMIT.
const maxGroup = 64

// sendGroup is the queue of sends waiting for the transaction in flight.
// It holds only requests being answered, never anything after them.
type sendGroup struct {
	mu    sync.Mutex
	queue []*groupedSend
	busy  bool // a transaction is in flight or about to be
	// together counts the sends committed in a transaction shared with
	// another: what the tests and the benchmark read of the grouping.
	together atomic.Int64
}

// groupedSend is one send waiting in a group, and its answer.
type groupedSend struct {
	ctx  context.Context
	m    outbox.Message
	o    outbox.Once
	lead chan struct{} // closed: it records the queue
	done chan struct{} // closed: sent and err are its answer
	// leads: lead is closed (read and written under the group's mu).
	leads bool
	sent  outbox.Sent
	err   error
	// answered: done is closed (read and written by the leader alone).
	answered bool
}

// sendOnce records m as outbox.SendOnce does, in a transaction it may
// share with the sends arriving meanwhile.
func (s *Server) sendOnce(ctx context.Context, m outbox.Message, o outbox.Once) (outbox.Sent, error) {
	p := &groupedSend{ctx: ctx, m: m, o: o, lead: make(chan struct{}), done: make(chan struct{})}
	g := &s.sends
	g.mu.Lock()
	g.queue = append(g.queue, p)
	first := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !first {
		select {
		case <-p.done:
			return p.sent, p.err
		case <-p.lead:
		case <-ctx.Done():
			// Its caller left while it waited: one still queued and not
			// handed the lead leaves the queue, recorded by nobody, so a
			// transaction stuck on a lock does not keep every caller of
			// serve waiting behind it. One already taken into a batch is
			// being recorded and is answered.
			if g.leave(p) {
				return outbox.Sent{}, ctx.Err()
			}
			select {
			case <-p.done:
				return p.sent, p.err
			case <-p.lead:
			}
		}
	}
	s.leadGroup()
	<-p.done
	return p.sent, p.err
}

// leave takes p out of the queue if it is still there and has not been
// handed the lead; it says whether it did.
func (g *sendGroup) leave(p *groupedSend) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, p)
	if i < 0 || p.leads {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}

// leadGroup records what is queued, then hands the lead to the first
// send queued meanwhile, or ends the group.
func (s *Server) leadGroup() {
	g := &s.sends
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := slices.Clone(g.queue[:n])
	// The queue keeps no pointer to a send it handed on (its request and
	// context would live as long as the backing array).
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()

	defer func() {
		// A panic (the server answers it 500) must neither leave a send
		// of the batch waiting nor the group without a leader.
		r := recover()
		for _, p := range batch {
			if !p.answered {
				p.answer(outbox.Sent{}, fmt.Errorf("record the message to %s: %v", p.m.To, r))
			}
		}
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.busy = false
		} else {
			g.queue[0].leads = true
			close(g.queue[0].lead)
		}
		g.mu.Unlock()
		if r != nil {
			panic(r)
		}
	}()
	s.recordGroup(batch)
}

// recordGroup records batch and answers each of its sends.
func (s *Server) recordGroup(batch []*groupedSend) {
	live := batch[:0:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			// Its caller left before it was recorded: nothing is.
			p.answer(outbox.Sent{}, err)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	ctx, stop := groupContext(live)
	defer stop()
	s.recordTogether(ctx, live, 2)
}

// recordTogether records ps in one transaction, tries times at most
// before each is recorded alone.
func (s *Server) recordTogether(ctx context.Context, ps []*groupedSend, tries int) {
	if len(ps) == 0 {
		return
	}
	if len(ps) == 1 || tries <= 0 {
		for _, p := range ps {
			p.answer(outbox.SendOnce(ctx, s.Store, p.m, p.o, s.now()))
		}
		return
	}
	now := s.now()
	ids := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		ids = append(ids, p.m.To)
		if p.o.Sender != "" {
			ids = append(ids, p.o.Sender)
		}
	}
	sent := make([]outbox.Sent, len(ps))
	failed := -1
	err := s.Store.Update(ctx, func(tx state.Tx) error {
		failed = -1 // an attempt the store ran again starts afresh
		if err := tx.LockSpores(ctx, ids); err != nil {
			return err
		}
		for i, p := range ps {
			var err error
			if sent[i], err = outbox.SendOnceIn(ctx, tx, p.m, p.o, now); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil:
		s.sends.together.Add(int64(len(ps)))
		for i, p := range ps {
			p.answer(sent[i], nil)
		}
	case failed >= 0 && !errors.Is(err, context.Canceled):
		// That send's own refusal, or its statement's fault: it alone
		// is judged again in a transaction of its own, after the sends
		// before it and before those after it, so each is judged in the
		// order they came (the rate limit counts the ones before).
		s.recordTogether(ctx, ps[:failed], tries-1)
		s.recordTogether(ctx, ps[failed:failed+1], 0)
		s.recordTogether(ctx, ps[failed+1:], tries-1)
	case nothingCommitted(err):
		// The store could not be reached, or every caller left: nothing
		// of the group was written, and recording each alone would only
		// wait as long again for each, with every other send of serve
		// queued behind them.
		for _, p := range ps {
			p.answer(outbox.Sent{}, err)
		}
	default:
		// A lost COMMIT (the repeat probe by id tells each send whether
		// it landed) or any other fault: each is recorded alone.
		s.recordTogether(ctx, ps, 0)
	}
}

// nothingCommitted says err is a transaction's failure that surely wrote
// nothing: the store unavailable (not a COMMIT whose answer was lost) or
// the group's callers all gone.
func nothingCommitted(err error) bool {
	if errors.Is(err, state.ErrOutcomeUnknown) {
		return false
	}
	var ue *state.UnavailableError
	return errors.As(err, &ue) || errors.Is(err, context.Canceled)
}

// answer hands p its answer.
func (p *groupedSend) answer(sent outbox.Sent, err error) {
	p.sent, p.err, p.answered = sent, err, true
	close(p.done)
}

// groupContext is the context of a group's transaction: its sends'
// values (the first's), cancelled once every one of their callers has
// left, and not before: one caller leaving does not undo the others'.
func groupContext(ps []*groupedSend) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ps[0].ctx))
	left := atomic.Int32{}
	left.Store(int32(len(ps)))
	stops := make([]func() bool, 0, len(ps))
	for _, p := range ps {
		stops = append(stops, context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
