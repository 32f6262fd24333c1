// Package loop runs a pass again and again, at an interval with jitter,
// until its context ends: the loop of `sporectl reconcile --every` and of
// `serve --reconcile-every`. It holds nothing across passes but when the
// store was last reachable, so a loop killed at any point loses nothing
// a cron run would keep. It must never run two passes at once, nor cut a
// pass short when asked to stop, beyond the drain it is given.
package loop

import (
	"context"
	"math/rand/v2"
	"time"
)

// DefaultJitter is the most a wait is stretched, as a fraction of the
// interval: loops started together (a restarted fleet of them, a loop
// and the CronJob) drift apart instead of passing in step.
const DefaultJitter = 0.1

// DefaultDrain is how long a pass in flight at the stop is given to
// finish before its context is cancelled (its transaction then rolls
// back, as a killed cron run's would).
const DefaultDrain = 30 * time.Second

// Loop is one loop's settings; Pass is the only required field.
type Loop struct {
	// Every is the interval between the end of one pass and the start
	// of the next, before jitter; more than 0.
	Every time.Duration
	// Jitter stretches each wait by up to this fraction of Every
	// (uniformly at random); 0 means none.
	Jitter float64
	// GiveUpAfter ends the loop with a pass's error when every pass has
	// failed with an error Unreachable accepts for at least this long;
	// 0 never gives up.
	GiveUpAfter time.Duration
	// Unreachable says whether a pass's error means the store could not
	// be reached (only those count towards GiveUpAfter); nil: none does.
	Unreachable func(error) bool
	// Drain is how long a pass in flight at the stop may go on (0:
	// DefaultDrain).
	Drain time.Duration

	// Pass is one pass; its error is a failed pass.
	Pass func(ctx context.Context) error
	// Failed is told of each failed pass that does not end the loop.
	Failed func(err error)

	// Now and Sleep are the clock (tests give a fake one); Sleep returns
	// ctx's error when ctx ends first. Rand is a number in [0, 1).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
}

// Run runs a pass at once, then one after each wait, until ctx ends: a
// stop between passes returns nil at once; a stop during a pass lets it
// finish (for at most Drain) and returns nil whatever it returned. The
// only error Run returns is a pass's, when the store stayed unreachable
// for GiveUpAfter.
func (l *Loop) Run(ctx context.Context) error {
	var since time.Time // when the passes began failing as unreachable
	for {
		err := l.pass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err == nil:
			since = time.Time{}
		case l.Unreachable != nil && l.Unreachable(err):
			now := l.now()
			if since.IsZero() {
				since = now
			}
			if l.GiveUpAfter > 0 && now.Sub(since) >= l.GiveUpAfter {
				return err
			}
			l.failed(err)
		default:
			// The store answered: it is not unreachable, whatever else
			// went wrong.
			since = time.Time{}
			l.failed(err)
		}
		if l.sleep(ctx, l.Wait()) != nil {
			return nil
		}
	}
}

// Wait is the time to the next pass: Every stretched by the jitter.
func (l *Loop) Wait() time.Duration {
	if l.Jitter <= 0 {
		return l.Every
	}
	r := rand.Float64
	if l.Rand != nil {
		r = l.Rand
	}
	return l.Every + time.Duration(float64(l.Every)*l.Jitter*r())
}

// pass runs one pass on a context the stop does not cancel at once: the
// pass's transaction commits (or rolls back) whole, and only a pass that
// outlives the drain is cancelled.
func (l *Loop) pass(ctx context.Context) error {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		drain := l.Drain
		if drain <= 0 {
			drain = DefaultDrain
		}
		// A real timer even under a fake clock: the drain bounds a
		// real pass.
		if sleep(pctx, drain) == nil {
			cancel()
		}
	}()
	return l.Pass(pctx)
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loop) sleep(ctx context.Context, d time.Duration) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) failed(err error) {
	if l.Failed != nil {
		l.Failed(err)
	}
}
