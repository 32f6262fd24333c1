package share

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gate is a read that counts its runs and, while held, blocks until
// released: the callers that come meanwhile overlap it.
type gate struct {
	reads   atomic.Int64
	entered chan struct{}
	release chan struct{}
	err     error
	// ctxErr is the read's context's error when it returned.
	ctxErr atomic.Pointer[error]
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gate) read(ctx context.Context) (int64, error) {
	n := g.reads.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	err := ctx.Err()
	g.ctxErr.Store(&err)
	if err != nil {
		return 0, err
	}
	return n, g.err
}

// open is a read that never blocks.
func (g *gate) open() *gate { close(g.release); return g }

// getAll calls Get from n goroutines once the first one's read runs, and
// waits until all n are in Get.
func getAll(t *testing.T, v *Value[int64], g *gate, n int, maxAge time.Duration) (vals []int64, errs []error, wait func()) {
	vals, errs = make([]int64, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals[i], errs[i] = v.Get(context.Background(), maxAge, g.read)
		}()
		if i == 0 {
			<-g.entered
		}
	}
	require.Eventually(t, func() bool { return v.Waiting() == n }, 10*time.Second, time.Millisecond, "every caller waits")
	return vals, errs, wg.Wait
}

func TestOverlappingCallersShareOneRead(t *testing.T) {
	var v Value[int64]
	g := newGate()
	vals, errs, wait := getAll(t, &v, g, 5, -1)
	close(g.release)
	wait()
	require.Equal(t, int64(1), g.reads.Load(), "five callers, one read")
	for i := range vals {
		require.NoError(t, errs[i])
		require.Equal(t, int64(1), vals[i], "caller %d", i)
	}
	require.Zero(t, v.Waiting())
}

func TestLastAnswerWithinMaxAge(t *testing.T) {
	var v Value[int64]
	g := newGate().open()
	ctx := context.Background()
	got, err := v.Get(ctx, time.Hour, g.read)
	require.NoError(t, err)
	require.Equal(t, int64(1), got)
	<-g.entered

	got, _ = v.Get(ctx, time.Hour, g.read)
	require.Equal(t, int64(1), got, "within maxAge: the last answer")
	require.Equal(t, int64(1), g.reads.Load())

	got, _ = v.Get(ctx, 0, g.read)
	<-g.entered
	require.Equal(t, int64(2), got, "maxAge 0: a caller that overlaps no read reads again")
	got, _ = v.Get(ctx, -1, g.read)
	<-g.entered
	require.Equal(t, int64(3), got, "nor does a negative one keep anything")

	// Staleness is bounded: once maxAge has passed since the read ended,
	// the next caller reads again.
	const age = 50 * time.Millisecond
	got, _ = v.Get(ctx, 0, g.read)
	<-g.entered
	require.Equal(t, int64(4), got)
	ended := time.Now()
	got, _ = v.Get(ctx, age, g.read)
	if time.Since(ended) < age { // else too loaded a machine to tell
		require.Equal(t, int64(4), got, "younger than maxAge: the last answer")
	}
	time.Sleep(age)
	before := g.reads.Load()
	got, _ = v.Get(ctx, age, g.read)
	require.Equal(t, before+1, got, "older than maxAge: read again")
}

func TestErrorGoesToEveryWaiterAndIsNotKept(t *testing.T) {
	var v Value[int64]
	g := newGate()
	g.err = errors.New("store down")
	_, errs, wait := getAll(t, &v, g, 4, time.Hour)
	close(g.release)
	wait()
	require.Equal(t, int64(1), g.reads.Load())
	for i, err := range errs {
		require.ErrorIs(t, err, g.err, "caller %d", i)
	}

	g.err = nil
	got, err := v.Get(context.Background(), time.Hour, g.read)
	<-g.entered
	require.NoError(t, err, "the error was not kept")
	require.Equal(t, int64(2), got)
}

func TestErrorKeepsTheLastGoodAnswer(t *testing.T) {
	var v Value[int64]
	g := newGate().open()
	ctx := context.Background()
	_, err := v.Get(ctx, time.Hour, g.read)
	<-g.entered
	require.NoError(t, err)
	g.err = errors.New("store down")
	_, err = v.Get(ctx, 0, g.read)
	<-g.entered
	require.ErrorIs(t, err, g.err)
	got, err := v.Get(ctx, time.Hour, g.read)
	require.NoError(t, err)
	require.Equal(t, int64(1), got, "a failed read replaced nothing")
}

func TestCallerLeavingDoesNotFailTheOthers(t *testing.T) {
	var v Value[int64]
	g := newGate()
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := v.Get(ctx, -1, g.read)
		first <- err
	}()
	<-g.entered
	type answer struct {
		val int64
		err error
	}
	second := make(chan answer, 1)
	go func() {
		got, err := v.Get(context.Background(), -1, g.read)
		second <- answer{got, err}
	}()
	require.Eventually(t, func() bool { return v.Waiting() == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-first, context.Canceled, "the caller that started the read left")
	close(g.release)
	a := <-second
	require.NoError(t, a.err)
	require.Equal(t, int64(1), a.val, "the one still waiting gets the read")
	require.Nil(t, *g.ctxErr.Load(), "the read was not cancelled")
}

func TestReadCancelledWhenEveryCallerLeft(t *testing.T) {
	var v Value[int64]
	g := newGate()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := v.Get(ctx, time.Hour, g.read)
		done <- err
	}()
	<-g.entered
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { p := g.ctxErr.Load(); return p != nil && errors.Is(*p, context.Canceled) },
		10*time.Second, time.Millisecond, "nobody waits: the read is cancelled")

	// The next caller starts a read of its own, not the cancelled one's
	// answer, and nothing of the cancelled one was kept.
	close(g.release)
	got, err := v.Get(context.Background(), time.Hour, g.read)
	<-g.entered
	require.NoError(t, err)
	require.Equal(t, int64(2), got)
}

func TestPanicIsAnError(t *testing.T) {
	var v Value[int64]
	_, err := v.Get(context.Background(), time.Hour, func(context.Context) (int64, error) { panic("boom") })
	require.ErrorContains(t, err, "boom")
	got, err := v.Get(context.Background(), time.Hour, func(context.Context) (int64, error) { return 7, nil })
	require.NoError(t, err)
	require.Equal(t, int64(7), got, "nothing kept of the panic")
}
