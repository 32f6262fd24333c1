package cli

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/internal/loop"
)

// defaultGiveUpAfter is how long `reconcile --every` keeps trying a
// store it cannot reach before it ends with exit 6 (docs/cli.md): long
// enough for a PostgreSQL restart or failover, short enough that a
// supervisor hears of a store that is gone.
const defaultGiveUpAfter = 5 * time.Minute

// validateLoop checks --every and --give-up-after; cobra has refused a
// value that is no duration already, naming the flag.
func (o *reconcileOptions) validateLoop() error {
	switch {
	case o.everySet && o.Every <= 0:
		return usageErrorf("invalid value %s for --every: must be more than 0, e.g. 30s", o.Every)
	case o.GiveUpAfter < 0:
		return usageErrorf("invalid value %s for --give-up-after: must be 0 (never) or more", o.GiveUpAfter)
	case o.giveUpSet && o.Every == 0:
		return usageErrorf("--give-up-after needs --every: a single pass gives up at once")
	case o.Every > 0 && o.DryRun:
		return usageErrorf("--every and --dry-run do not go together: a dry run is one look")
	}
	return nil
}

// loop runs a pass every o.Every until ctx ends (SIGINT, SIGTERM): nil
// then, or the pass's error when the store stayed unreachable for
// GiveUpAfter. Nothing is carried from one pass to the next but the
// table last printed, so that an unchanged one is not printed again.
func (o *reconcileOptions) loop(ctx context.Context) error {
	errOut := o.f.IO.ErrOut
	var shown []byte
	l := &loop.Loop{
		Every: o.Every, Jitter: loop.DefaultJitter, GiveUpAfter: o.GiveUpAfter,
		Unreachable: func(err error) bool { return exitCode(err) == ExitStore },
		Pass:        func(ctx context.Context) error { return o.loopPass(ctx, &shown) },
		Failed: func(err error) {
			fmt.Fprintf(errOut, "%s reconcile: pass failed: %v\n", o.f.Now().UTC().Format(time.RFC3339), err)
		},
	}
	fmt.Fprintf(errOut, "reconcile: a pass every %s (and up to %d%% more) until SIGINT or SIGTERM\n", o.Every, int(loop.DefaultJitter*100))
	if err := l.Run(ctx); err != nil {
		fmt.Fprintf(errOut, "reconcile: the store stayed unreachable for %s: giving up\n", o.GiveUpAfter)
		return err
	}
	fmt.Fprintln(errOut, "reconcile: stopped")
	return nil
}

// loopPass is one pass of the loop, as a cron run: it opens the store,
// runs the pass, writes its actions and its line on stderr and the table
// on stdout when it changed. Spores that need attention are said in the
// line, not returned: the loop goes on.
func (o *reconcileOptions) loopPass(ctx context.Context, shown *[]byte) error {
	began, at := time.Now(), o.f.Now()
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := o.pass(ctx, st)
	if err != nil {
		return err
	}
	o.printActions(rep)
	if rep.missing != nil {
		return fmt.Errorf("reconcile: %w", rep.missing)
	}
	var table bytes.Buffer
	if err := printTo(&table, o.f.Global.Output, o.f.Global.NoHeaders, statusList{rep.Result, rep.now}); err != nil {
		return err
	}
	if !bytes.Equal(table.Bytes(), *shown) {
		if err := o.f.Print(rep); err != nil {
			return err
		}
		*shown = table.Bytes()
	}
	fmt.Fprintln(o.f.IO.ErrOut, rep.line(at, time.Since(began)))
	return nil
}
