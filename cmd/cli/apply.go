package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/colonyspec"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

type applyOptions struct {
	f         *Factory
	Files     []string
	Prune     bool
	PurgeHome bool
	Yes       bool
}

// newCmdApply builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdApply(f *Factory, runF func(context.Context, *applyOptions) error) *cobra.Command {
	o := &applyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Make the store say what Colony documents say, in one transaction",
		Long: `Apply Colony documents (apiVersion sporectl/v1; see "A declarative colony" in the docs): create the
spores they list that do not exist, change those that differ, and with --prune
delete the spores of their colonies that they no longer list — every change of
every document in one transaction, or none; nothing at all when nothing
differs. A fault in any file (its YAML, a field the format does not have, a
bad value) is reported with its file, line and field, and nothing is applied.
Then the spores whose desired state changed are started or stopped, as wake,
sleep and stop do.

--prune --purge-home that would delete homes asks first on a terminal, and
needs --yes elsewhere (see "Confirmation" in the docs' CLI page).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.PurgeHome && !o.Prune {
				return usageErrorf("--purge-home needs --prune: only pruned spores lose their homes")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringArrayVarP(&o.Files, "filename", "f", nil, "a Colony file, a directory of them, or - for stdin (repeatable)")
	cmd.Flags().BoolVar(&o.Prune, "prune", false, "delete the spores of the applied colonies that the files do not list")
	cmd.Flags().BoolVar(&o.PurgeHome, "purge-home", false, "with --prune: also delete the pruned spores' homes")
	cmd.Flags().BoolVarP(&o.Yes, confirmFlag, "y", false, "with --prune --purge-home: do not ask before deleting homes")
	return cmd
}

func (o *applyOptions) run(ctx context.Context) error {
	docs, err := readColonies(o.f.IO.In, o.Files)
	if err != nil {
		return err
	}
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	opt := colonyspec.Options{Prune: o.Prune}
	// A read first: when nothing differs, nothing is written at all.
	p, err := planColonies(ctx, st, docs, opt)
	if err != nil {
		return err
	}
	if !p.Changed() {
		return o.f.Print(applyResults(p))
	}
	confirmed, err := o.confirmPurge(p.Prunes())
	if err != nil {
		return err
	}
	var rt reconcile.Runtime
	if len(p.Prunes()) > 0 {
		// As delete: a runtime that cannot even be built deletes nothing.
		if rt, err = o.f.Runtime(ctx, st); err != nil {
			return err
		}
	}
	now := o.f.Now().UTC()
	err = st.Update(ctx, func(tx state.Tx) error {
		// Planned again from this transaction's reads, so a change made
		// since the first read is judged, not overwritten.
		spores, err := tx.Spores(ctx)
		if err != nil {
			return err
		}
		settings, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		if p, err = colonyspec.MakePlan(docs, spores, settings, opt); err != nil {
			return err
		}
		if err := checkConfirmed(confirmed, p.Prunes()); err != nil {
			return err
		}
		return colonyspec.Apply(ctx, tx, p, now)
	})
	if err != nil {
		return err
	}
	var errs []error
	if prunes := p.Prunes(); len(prunes) > 0 {
		errs = append(errs, o.endPruned(ctx, st, rt, prunes)...)
	}
	if err := o.f.Print(applyResults(p)); err != nil {
		return err
	}
	errs = append(errs, o.act(ctx, st, p)...)
	return errors.Join(errs...)
}

// confirmPurge asks before a prune deletes homes (confirm: on a terminal,
// unless --yes; elsewhere --yes is required). It returns the spores the
// person agreed to lose with their homes; nil when no home is deleted,
// or --yes stands for any.
func (o *applyOptions) confirmPurge(prunes []string) ([]string, error) {
	if !o.PurgeHome || len(prunes) == 0 || o.Yes {
		return nil, nil
	}
	what := fmt.Sprintf("prune %d spore(s) the files do not list, with their homes: %s", len(prunes), idList(prunes))
	ios := o.f.IO
	if slices.Contains(o.Files, "-") {
		// The document came on stdin: nobody is left there to answer.
		ios.CanPrompt = false
	}
	if err := confirm(ios, false, true, what); err != nil {
		return nil, err
	}
	return prunes, nil
}

// checkConfirmed refuses a prune, planned again inside the transaction,
// of a spore whose home the person was not asked about (one created
// since the question): nothing is applied, and the next apply asks again.
func checkConfirmed(confirmed, prunes []string) error {
	if confirmed == nil {
		return nil
	}
	for _, id := range prunes {
		if !slices.Contains(confirmed, id) {
			return fmt.Errorf("apply: %s would be pruned with its home too, but it was not in the question (created meanwhile): nothing applied; run apply again", id)
		}
	}
	return nil
}

// planColonies plans docs against the store as it is now, in one read.
func planColonies(ctx context.Context, st state.Store, docs []colonyspec.Document, opt colonyspec.Options) (colonyspec.Plan, error) {
	return state.ViewValue(ctx, st, func(tx state.Tx) (colonyspec.Plan, error) {
		spores, err := tx.Spores(ctx)
		if err != nil {
			return colonyspec.Plan{}, err
		}
		settings, err := tx.Settings(ctx)
		if err != nil {
			return colonyspec.Plan{}, err
		}
		return colonyspec.MakePlan(docs, spores, settings, opt)
	})
}

// endPruned ends the processes (and with --purge-home the homes) of the
// pruned spores, which the store no longer has, as delete does.
func (o *applyOptions) endPruned(ctx context.Context, st state.Store, rt reconcile.Runtime, ids []string) []error {
	if rt == nil {
		var err error
		if rt, err = o.f.Runtime(ctx, st); err != nil {
			return []error{&RuntimeError{Op: "prune: removed from the store, but no runtime to end their processes (orphans now: see 'sporectl status')", Err: err}}
		}
	}
	var errs []error
	for _, id := range ids {
		if err := rt.Delete(ctx, id, o.PurgeHome); err != nil {
			errs = append(errs, &RuntimeError{Op: fmt.Sprintf("prune %s: removed from the store, but its processes or home could not be removed (an orphan now: run 'sporectl delete --orphan %s')", id, id), Err: err})
		}
	}
	return errs
}

// act runs the pass over the spores whose desired state apply recorded
// (as wake, sleep and stop do), so that what the files say runs runs.
// What it cannot start stays recorded for the next reconcile (an apply
// again finds no change, and runs no pass).
func (o *applyOptions) act(ctx context.Context, st state.Store, p colonyspec.Plan) []error {
	var ids, woken []string
	for _, c := range p.Changes {
		if c.Desired != "" {
			ids = append(ids, c.ID)
			if c.Desired == state.Running {
				woken = append(woken, c.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	out, err := o.f.Pass(st).Run(ctx, reconcile.Options{IDs: ids, Heal: true, Force: woken})
	if err != nil {
		return []error{err}
	}
	if out.ObserveErr != nil {
		return []error{&RuntimeError{Op: "apply: observe (the desired states are recorded; the next reconcile starts and stops them)", Err: out.ObserveErr}}
	}
	var errs []error
	for _, pl := range out.Plans {
		id := pl.Spore.ID
		why := fmt.Sprintf("apply %s (desired %s is recorded; the next reconcile or wake retries)", id, pl.Spore.Desired)
		switch {
		case errors.Is(pl.StartErr, state.ErrNotFound):
			// Deleted since: nothing to start.
		case pl.StartErr != nil:
			errs = append(errs, &RuntimeError{Op: why, Err: pl.StartErr})
		case pl.StopErr != nil:
			errs = append(errs, &RuntimeError{Op: why, Err: pl.StopErr})
		case slices.Contains(woken, id) && pl.Verdict.Effective == policy.Error:
			errs = append(errs, &UnhealthyError{Msg: fmt.Sprintf("apply %s: desired Running is recorded, but its circuit breaker is open; run 'sporectl reset %s'", id, id)})
		}
	}
	return errs
}

// applyResults is kubectl's one line per spore: created, configured,
// unchanged, pruned.
func applyResults(p colonyspec.Plan) actionResults {
	res := actionResults{Results: []actionResult{}}
	for _, c := range p.Changes {
		res.Results = append(res.Results, actionResult{Kind: c.Kind(), ID: c.Name(), Action: string(c.Action)})
	}
	return res
}
