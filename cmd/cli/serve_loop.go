package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sporectl/sporectl/internal/loop"
	"github.com/sporectl/sporectl/state"
)

// startLoop runs reconcile's loop over st in the background when
// --reconcile-every is given (docs/cli.md "The loop"): the passes of
// `reconcile --every`, on serve's store, until ctx ends. It never gives
// up on the store, since serve goes on answering, and prints no table:
// each pass's actions and line go to stderr. The function it returns
// ends the loop (serve may return before ctx ends, when it fails) and
// waits for the pass in flight.
func (o *serveOptions) startLoop(ctx context.Context, st state.Store) (wait func()) {
	if o.ReconcileEvery <= 0 {
		return func() {}
	}
	errOut := o.f.IO.ErrOut
	ro := &reconcileOptions{f: o.f, Every: o.ReconcileEvery}
	l := &loop.Loop{
		Every: o.ReconcileEvery, Jitter: loop.DefaultJitter,
		Pass: func(ctx context.Context) error {
			began, at := time.Now(), o.f.Now()
			rep, err := ro.pass(ctx, st)
			if err != nil {
				return err
			}
			ro.printActions(rep)
			fmt.Fprintln(errOut, rep.line(at, time.Since(began)))
			return nil
		},
		Failed: func(err error) {
			fmt.Fprintf(errOut, "%s reconcile: pass failed: %v\n", o.f.Now().UTC().Format(time.RFC3339), err)
		},
	}
	fmt.Fprintf(errOut, "reconciling every %s (and up to %d%% more)\n", o.ReconcileEvery, int(loop.DefaultJitter*100))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx) // nil: it has no GiveUpAfter
	}()
	return func() { cancel(); <-done }
}

// warnAPIURL says on stderr when the store tells spores an address that
// does not reach this serve (apiURLMismatch): their calls to it
// (mycologist, swarm) would fail with exit 14. A store that cannot be
// read now is no reason to warn.
func (o *serveOptions) warnAPIURL(ctx context.Context, st state.Store, addr net.Addr, tls bool) {
	s, err := state.ViewValue(ctx, st, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	if err != nil {
		return
	}
	// The host as given (a name stays a name), the port as bound (--addr
	// :0 picks one).
	host, _, _ := net.SplitHostPort(o.Addr)
	_, port, _ := net.SplitHostPort(addr.String())
	listen := net.JoinHostPort(host, port)
	why := apiURLMismatch(s, listen, tls)
	if why == "" {
		return
	}
	api := s.APIURL
	if api == "" {
		api = "http://" + defaultServeAddr
	}
	fmt.Fprintf(o.f.IO.ErrOut, "warning: spores are told to reach serve at %s (the store's api-url), but %s: their mycologist and swarm calls would fail (exit 14); serve on that address, or run 'sporectl init --api-url URL' (running spores keep the old URL until they restart)\n", api, why)
}
