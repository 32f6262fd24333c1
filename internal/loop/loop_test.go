package loop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock advances its time by each wait at once and records the
// waits; stopAfter cancels the loop's context once that many waits were
// asked for.
type fakeClock struct {
	mu        sync.Mutex
	now       time.Time
	waits     []time.Duration
	stopAfter int
	cancel    context.CancelFunc
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	stop := c.stopAfter > 0 && len(c.waits) >= c.stopAfter
	c.mu.Unlock()
	if stop {
		c.cancel()
	}
	return ctx.Err()
}

func newLoop(t *testing.T, stopAfter int, pass func(context.Context) error) (*Loop, *fakeClock, context.Context) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	c := &fakeClock{now: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC), stopAfter: stopAfter, cancel: cancel}
	return &Loop{Every: 10 * time.Second, Pass: pass, Now: c.Now, Sleep: c.Sleep}, c, ctx
}

var errDown = errors.New("store unreachable")

func TestAPassThenOneAfterEachWaitUntilStopped(t *testing.T) {
	passes := 0
	l, c, ctx := newLoop(t, 3, func(context.Context) error { passes++; return nil })
	require.NoError(t, l.Run(ctx))
	require.Equal(t, 3, passes, "a pass at once, then one after each of the two waits that did not stop it")
	require.Equal(t, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, c.waits)
}

func TestJitterStretchesTheWaitByUpToItsFraction(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999} {
		l := &Loop{Every: 10 * time.Second, Jitter: 0.1, Rand: func() float64 { return r }}
		require.Equal(t, 10*time.Second+time.Duration(float64(time.Second)*r), l.Wait())
	}
	// The real source stays inside [Every, Every·1.1).
	l := &Loop{Every: time.Second, Jitter: DefaultJitter}
	for range 1000 {
		w := l.Wait()
		require.GreaterOrEqual(t, w, time.Second)
		require.Less(t, w, 1100*time.Millisecond)
	}
}

func TestAFailedPassIsToldAndTheLoopGoesOn(t *testing.T) {
	boom := errors.New("one spore's start failed")
	var told []error
	passes := 0
	l, _, ctx := newLoop(t, 4, func(context.Context) error {
		passes++
		if passes%2 == 1 {
			return boom
		}
		return nil
	})
	l.Failed = func(err error) { told = append(told, err) }
	l.Unreachable = func(err error) bool { return errors.Is(err, errDown) }
	l.GiveUpAfter = time.Second // would end at once if boom counted
	require.NoError(t, l.Run(ctx))
	require.Equal(t, 4, passes)
	require.Equal(t, []error{boom, boom}, told)
}

func TestAStoreUnreachableForGiveUpAfterEndsTheLoopWithItsError(t *testing.T) {
	passes := 0
	l, c, ctx := newLoop(t, 0, func(context.Context) error { passes++; return errDown })
	l.Unreachable = func(err error) bool { return errors.Is(err, errDown) }
	l.GiveUpAfter = 35 * time.Second
	var told int
	l.Failed = func(error) { told++ }
	err := l.Run(ctx)
	require.ErrorIs(t, err, errDown)
	// Failing since the first pass: 0s, 10s, 20s, 30s told; 40s ≥ 35s ends it.
	require.Equal(t, 5, passes)
	require.Equal(t, 4, told)
	require.Len(t, c.waits, 4)
}

func TestAPassThatReachesTheStoreStartsTheGiveUpClockOver(t *testing.T) {
	passes := 0
	// down, down, down, up, down, down, down…: never 25s down in a row
	// until the end.
	l, _, ctx := newLoop(t, 0, func(context.Context) error {
		passes++
		if passes == 4 {
			return nil
		}
		return errDown
	})
	l.Unreachable = func(err error) bool { return errors.Is(err, errDown) }
	l.GiveUpAfter = 25 * time.Second
	require.ErrorIs(t, l.Run(ctx), errDown)
	// Down from pass 5 (40s): passes 5..8 at 40, 50, 60, 70s; 70-40 ≥ 25.
	require.Equal(t, 8, passes)
}

func TestAnotherErrorIsNotUnreachable(t *testing.T) {
	passes := 0
	other := errors.New("corrupt")
	l, _, ctx := newLoop(t, 0, func(context.Context) error {
		passes++
		if passes%3 == 0 {
			return other // the store answered
		}
		return errDown
	})
	l.Unreachable = func(err error) bool { return errors.Is(err, errDown) }
	l.GiveUpAfter = 15 * time.Second
	l.Failed = func(error) {}
	// Two unreachable passes in a row span 10s, under 15s: it runs until
	// stopped.
	stopAt := 30
	l.Sleep = func(ctx context.Context, d time.Duration) error {
		if passes >= stopAt {
			return context.Canceled
		}
		return nil
	}
	l.Now = func() time.Time { return time.Unix(int64(passes)*10, 0) }
	require.NoError(t, l.Run(ctx))
	require.Equal(t, stopAt, passes)
}

func TestNeverGivesUpWithoutGiveUpAfter(t *testing.T) {
	passes := 0
	l, _, ctx := newLoop(t, 100, func(context.Context) error { passes++; return errDown })
	l.Unreachable = func(err error) bool { return errors.Is(err, errDown) }
	require.NoError(t, l.Run(ctx))
	require.Equal(t, 100, passes)
}

func TestAStopDuringAPassLetsItFinishAndEndsTheLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	passes := 0
	var passCtxErr error
	l := &Loop{Every: time.Hour, Pass: func(pctx context.Context) error {
		passes++
		cancel() // SIGTERM arrives mid-pass
		// The pass's own context is not cancelled by the stop.
		passCtxErr = pctx.Err()
		return errDown
	}}
	require.NoError(t, l.Run(ctx), "a stop ends the loop with nil, whatever the pass returned")
	require.Equal(t, 1, passes, "no pass after the stop")
	require.NoError(t, passCtxErr, "the pass in flight keeps its context")
}

func TestAPassThatOutlivesTheDrainIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l := &Loop{Every: time.Hour, Drain: 10 * time.Millisecond, Pass: func(pctx context.Context) error {
		cancel()
		<-pctx.Done() // a pass stuck on the store: only the drain ends it
		return pctx.Err()
	}}
	require.NoError(t, l.Run(ctx))
}

func TestAStopBetweenPassesEndsTheLoopAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	passes := 0
	l := &Loop{Every: time.Hour, Pass: func(context.Context) error { passes++; return nil }}
	l.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	require.NoError(t, l.Run(ctx))
	require.Equal(t, 1, passes)
}
