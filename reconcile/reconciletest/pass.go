package reconciletest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Epoch is the clock of a test's pass unless it is given one (At,
// WithClock, RealClock): a fixed time, so what a pass records with it
// reads the same in every run.
var Epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// PassOption sets one thing of a test's pass (NewPass).
type PassOption func(*reconcile.Pass)

// NewPass is the pass a test runs over st: the runtime its options name
// (WithFake, WithRuntime or WithRuntimeFunc; a test without one fails
// here), the clock fixed at Epoch and a logger that discards, unless
// options say otherwise. It is the one way tests build a pass, so a
// field the pass gains has one place to get its test default.
func NewPass(tb testing.TB, st state.Store, opts ...PassOption) *reconcile.Pass {
	tb.Helper()
	ps := &reconcile.Pass{
		Store:  st,
		Now:    func() time.Time { return Epoch },
		Logger: slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(ps)
	}
	if ps.Runtime == nil {
		tb.Fatal("reconciletest.NewPass: no runtime (WithFake, WithRuntime or WithRuntimeFunc)")
	}
	return ps
}

// WithFake runs the pass over the fake runtime rt, its bridges dialled in
// memory (rt.Dial).
func WithFake(rt *Runtime) PassOption {
	return func(ps *reconcile.Pass) {
		WithRuntime(rt)(ps)
		ps.Dial = rt.Dial
	}
}

// WithRuntime runs the pass over rt (a real runtime, the fake behind
// HTTP, a wrapper), its bridges dialled over HTTP unless WithDial says
// otherwise.
func WithRuntime(rt reconcile.Runtime) PassOption {
	return WithRuntimeFunc(func(context.Context, state.Settings) (reconcile.Runtime, error) { return rt, nil })
}

// WithRuntimeFunc builds the runtime for each run, as the CLI does.
func WithRuntimeFunc(fn func(context.Context, state.Settings) (reconcile.Runtime, error)) PassOption {
	return func(ps *reconcile.Pass) { ps.Runtime = fn }
}

// WithDial reaches the bridges through d.
func WithDial(d reconcile.Dialer) PassOption {
	return func(ps *reconcile.Pass) { ps.Dial = d }
}

// At fixes the pass's clock at t.
func At(t time.Time) PassOption {
	return WithClock(func() time.Time { return t })
}

// WithClock is the pass's clock: for a test that moves time itself.
func WithClock(now func() time.Time) PassOption {
	return func(ps *reconcile.Pass) { ps.Now = now }
}

// RealClock is the wall clock, for a test of real bridges, pods or
// servers whose times must agree with the pass's.
func RealClock() PassOption {
	return WithClock(nil)
}

// WithLogger logs the pass to l.
func WithLogger(l *slog.Logger) PassOption {
	return func(ps *reconcile.Pass) { ps.Logger = l }
}

// WithFinished hears of every run of the pass (reconcile.Pass.Finished).
func WithFinished(fn func(reconcile.Options, *reconcile.Outcome, time.Duration, error)) PassOption {
	return func(ps *reconcile.Pass) { ps.Finished = fn }
}
