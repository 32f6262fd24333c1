package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// A spore that sends (SendOnce with Once.Sender) is charged for each
// message it sends: a "sent" lifecycle event in its own log, naming the
// entry and the target, in the transaction that records the message. Its
// rate limit (Once.Limit in any Once.Per) is counted from those events,
// so it holds for any number of senders (serve replicas) at once; a
// repeat is not charged (it is recognised before).

// MaxSendOnceScan bounds how many of a sender's last events SendOnce
// reads to count its messages against its limit (sentSince).
const MaxSendOnceScan = 4096

// charge checks o.Sender's limit and records the message in its log.
func charge(ctx context.Context, tx state.Tx, o Once, to string, now time.Time) error {
	if o.Limit > 0 {
		times, err := sentSince(ctx, tx, o.Sender, now.Add(-o.Per), o.Limit)
		if err != nil {
			return err
		}
		if len(times) >= o.Limit {
			// Under the limit again once the Limit-th newest leaves the window.
			wait := max(times[o.Limit-1].Add(o.Per).Sub(now), time.Second).Round(time.Second)
			return &RateLimitError{Spore: o.Sender, Limit: o.Limit, Per: o.Per, RetryAfter: wait}
		}
	}
	_, err := tx.Append(ctx, o.Sender, []state.Event{{Kind: state.KindLifecycle, Action: "sent", At: now, Text: fmt.Sprintf("message %s to %s", o.ID, to)}})
	return err
}

// sentSince are the times of spore's "sent" events since then, newest
// first, at most limit of them, read from the end of its log.
func sentSince(ctx context.Context, tx state.Tx, spore string, since time.Time, limit int) ([]time.Time, error) {
	for n := 64; ; n *= 8 {
		n = min(n, MaxSendOnceScan)
		evs, err := tx.Tail(ctx, spore, n)
		if err != nil {
			return nil, err
		}
		var times []time.Time
		done := len(evs) < n || n == MaxSendOnceScan
		for i := len(evs) - 1; i >= 0 && len(times) < limit; i-- {
			ev := evs[i]
			if ev.Kind != state.KindAgent && ev.At.Before(since) {
				done = true
				break
			}
			if ev.Kind == state.KindLifecycle && ev.Action == "sent" {
				times = append(times, ev.At)
			}
		}
		if done || len(times) >= limit {
			return times, nil
		}
	}
}
