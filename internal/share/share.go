// Package share lets the callers of one expensive read that ask at about
// the same time share it: serve's fleet reads (a read-only pass over the
// whole fleet), which the operators' page and GET /api/spores run for
// every caller.
//
// The rule, in one place: a caller that comes while a read runs waits for
// that read and gets its answer, its error too; a caller that comes after
// it gets the last good answer while that answer ended less than the
// caller's maxAge ago, else it starts the next read. One read runs at a
// time. An error is given to the callers that waited for that read and
// never kept: the next caller reads again.
//
// A read runs under a context of its own (the values of the caller that
// started it, none of its deadline or cancellation), so a caller that
// leaves does not fail the others; when every caller of a read has left,
// the read's context is cancelled and the read is forgotten.
//
// What is kept is a copy of what was read, never state of its own: the
// caller decides how old it may be, and a process that restarts reads
// again.
package share

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Value is one read shared by its callers. The zero Value is ready; it
// must not be copied after first use.
type Value[T any] struct {
	mu      sync.Mutex
	last    T
	lastEnd time.Time // when last's read ended; zero: nothing kept
	run     *flight[T]
	waiting int
}

// flight is one read running, and the callers waiting for it.
type flight[T any] struct {
	done    chan struct{} // closed once val and err are set
	val     T
	err     error
	callers int
	cancel  context.CancelFunc
}

// Get returns the answer of the read running now, else the last answer
// when its read ended less than maxAge ago (maxAge ≤ 0: never), else the
// answer of a new read by read. It returns ctx's error when ctx ends
// first; the read goes on for the callers still waiting for it.
func (v *Value[T]) Get(ctx context.Context, maxAge time.Duration, read func(context.Context) (T, error)) (T, error) {
	v.mu.Lock()
	v.waiting++
	defer func() {
		v.mu.Lock()
		v.waiting--
		v.mu.Unlock()
	}()
	f := v.run
	if f == nil {
		if !v.lastEnd.IsZero() && time.Since(v.lastEnd) < maxAge {
			last := v.last
			v.mu.Unlock()
			return last, nil
		}
		f = v.start(ctx, read)
	}
	f.callers++
	v.mu.Unlock()

	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	select {
	case <-f.done:
		// Both were ready: the answer is there, take it.
		return f.val, f.err
	default:
	}
	if f.callers--; f.callers == 0 {
		// Nobody waits for it any more: stop it, and let the next
		// caller start its own rather than get this one's cancellation.
		f.cancel()
		if v.run == f {
			v.run = nil
		}
	}
	var zero T
	return zero, ctx.Err()
}

// start runs read in its own goroutine as the current flight; v.mu is
// held.
func (v *Value[T]) start(ctx context.Context, read func(context.Context) (T, error)) *flight[T] {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &flight[T]{done: make(chan struct{}), cancel: cancel}
	v.run = f
	go func() {
		defer cancel()
		val, err := protect(rctx, read)
		end := time.Now()
		v.mu.Lock()
		// A read its callers all left was cancelled: nothing of it is
		// kept, even if it finished.
		if v.run == f {
			v.run = nil
			if err == nil {
				v.last, v.lastEnd = val, end
			}
		}
		f.val, f.err = val, err
		close(f.done)
		v.mu.Unlock()
	}()
	return f
}

// protect is read(ctx), a panic turned into its error: the read runs on a
// goroutine of its own, where a panic would end the process rather than
// one request.
func protect[T any](ctx context.Context, read func(context.Context) (T, error)) (val T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shared read panicked: %v", p)
		}
	}()
	return read(ctx)
}

// Waiting is how many callers are in Get now (tests wait for it).
func (v *Value[T]) Waiting() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.waiting
}
