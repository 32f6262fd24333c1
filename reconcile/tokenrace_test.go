package reconcile_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// stepped wraps the fake runtime for one pass: hooks run after its
// observation and before its start, so a test can interleave passes.
type stepped struct {
	*reconciletest.Runtime
	afterObserve func()
	beforeStart  func()
}

func (r *stepped) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	o, err := r.Runtime.Observe(ctx, ids)
	if r.afterObserve != nil {
		r.afterObserve()
	}
	return o, err
}

func (r *stepped) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	if r.beforeStart != nil {
		r.beforeStart()
	}
	return r.Runtime.Start(ctx, s, l)
}

// Three wakes race (TestConcurrentWakes' "stored hash and the spore's
// token disagree"): passes D and E both see the spore dead; a third
// starts it with its own token; then D and E each plan a start, and each
// finds it running. Whatever they did with the token hash, the store must
// end up with the hash of the token the running spore has. When each
// pass committed a hash for its planned start up front and put the one
// it replaced back after finding the spore running, E (issued after D,
// committing after it) put back D's: a hash of a token nobody holds.
func TestPassRacingWakesKeepTheRunningSporesToken(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	ctx := context.Background()
	var racer, midRace state.TokenHash
	dObserved, eObserved, dStarting, eStarting, dDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	passWith := func(rt *stepped) *reconcile.Pass {
		ps := e.pass()
		ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) { return rt, nil }
		return ps
	}
	d := passWith(&stepped{Runtime: e.rt,
		afterObserve: func() { close(dObserved); <-eObserved },
		beforeStart:  func() { close(dStarting); <-eStarting },
	})
	ep := passWith(&stepped{Runtime: e.rt,
		afterObserve: func() {
			<-dObserved
			// Both saw it dead; now a third command starts it, its hash
			// committed before its token is handed out.
			c, h, err := reconcile.NewCredentials()
			if err == nil {
				err = e.st.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "a", h) })
			}
			if err == nil {
				err = e.rt.Start(ctx, state.Spore{Wish: state.Wish{ID: "a"}}, reconcile.Launch{Creds: c})
			}
			if err != nil {
				t.Error(err)
			}
			racer = h
			close(eObserved)
			<-dStarting // D has planned (and issued) its start first
		},
		beforeStart: func() {
			// While the losers are on their way, the running spore's own
			// token keeps working.
			_ = e.st.View(ctx, func(tx state.Tx) (err error) { midRace, err = tx.TokenHash(ctx, "a"); return err })
			close(eStarting)
			<-dDone
		},
	})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		defer close(dDone)
		_, errs[0] = d.Run(ctx, reconcile.Options{Heal: true, Force: []string{"a"}})
	})
	wg.Go(func() { _, errs[1] = ep.Run(ctx, reconcile.Options{Heal: true, Force: []string{"a"}}) })
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, 3, e.rt.Calls("Start"), "both passes planned a start and reached the runtime")

	var stored state.TokenHash
	require.NoError(t, e.st.View(ctx, func(tx state.Tx) (err error) { stored, err = tx.TokenHash(ctx, "a"); return err }))
	require.Equal(t, racer, midRace, "a pass that found the spore running locked its token out meanwhile")
	require.Equal(t, racer, stored, "the store must hold the hash of the token the running spore has")
}
