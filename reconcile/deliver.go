package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// A message is recorded by reconcile/outbox (an event in the target's
// log and an entry in its outbox, in one transaction) and delivered by
// the pass: Deliver runs passes over its spore until it is posted.

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
	return ps.DeliverFrom(ctx, nil, e, start, wait)
}

// DeliverFrom is Deliver whose first pass starts from snap, the snapshot
// of e's spore read in the transaction that recorded e (LoadIn), instead
// of loading one: that pass reads the spore's record only in its commit.
// A nil snap loads it, as Deliver does.
func (ps *Pass) DeliverFrom(ctx context.Context, snap *Snapshot, e state.OutboxEntry, start bool, wait time.Duration) (DeliveryResult, error) {
	res := DeliveryResult{State: "waiting"}
	if snap != nil && (len(snap.Spores) != 1 || snap.Spores[0].ID != e.Spore) {
		snap = nil // not e's spore's alone: loaded instead
	}
	deadline := time.Now().Add(wait)
	opt := Options{IDs: []string{e.Spore}, Deliver: true, Heal: start}
	if start {
		opt.Force = []string{e.Spore}
	}
	for {
		out, err := ps.runOn(ctx, opt, snap)
		snap = nil // read once: the next pass loads its own
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
