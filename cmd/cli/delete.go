package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

type deleteOptions struct {
	f         *Factory
	IDs       []string
	Targets   targetFlags
	Yes       bool
	PurgeHome bool
	Orphan    bool
}

// newCmdDelete builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdDelete(f *Factory, runF func(context.Context, *deleteOptions) error) *cobra.Command {
	o := &deleteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "delete (ID... | -l SELECTOR | --all)",
		Short: "Delete spores from the store with their event logs and queued messages",
		Long: `Delete spores: remove them from the store — desired state, event log, outbox
and token — in one transaction (all of them or, if any id does not exist,
none), then end their processes (pod, or process tree). Their homes are kept
unless --purge-home, and a home is removed only after the store no longer has
the spore, so a failure never leaves a spore in the store without its home.
If ending the processes fails after the store change, they are an orphan that
'status' lists and 'delete --orphan ID' removes.

On a terminal it asks before deleting more than one spore, or any spores
chosen by -l or --all; --yes answers for you. Not on a terminal, spores
chosen by -l or --all need --yes (named ids do not; see
"Confirmation" in the docs' CLI page).`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			if o.Orphan && o.Targets.given() {
				return usageErrorf("--orphan takes the orphans' ids, not -l or --all (status lists them)")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	addTargetFlags(cmd, &o.Targets)
	cmd.Flags().BoolVarP(&o.Yes, confirmFlag, "y", false, "do not ask before deleting several spores, or any chosen by -l or --all")
	cmd.Flags().BoolVar(&o.PurgeHome, "purge-home", false, "also delete the spores' homes (files, git work, Claude's session)")
	cmd.Flags().BoolVar(&o.Orphan, "orphan", false, "delete runtime objects of ids that are not in the store (orphans that status lists)")
	return cmd
}

func (o *deleteOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.Orphan {
		return o.deleteOrphans(ctx, st)
	}
	ids, ok, err := resolveTargets(ctx, o.f, st, o.IDs, o.Targets)
	if err != nil || !ok {
		return err
	}
	if len(ids) > 1 || o.Targets.given() {
		what := fmt.Sprintf("delete %d spore(s): %s", len(ids), idList(ids))
		if o.PurgeHome {
			what += ", with their homes"
		}
		if err := confirm(o.f.IO, o.Yes, o.Targets.given(), what); err != nil {
			return err
		}
	}
	o.IDs = ids
	// Build the runtime before anything changes: a cluster that cannot
	// even be configured deletes nothing.
	rt, err := o.f.Runtime(ctx, st)
	if err != nil {
		return err
	}
	// The store goes first, in one transaction: a wake racing this delete
	// either committed its start before (and the runtime step below ends
	// it) or finds the spore gone when it is about to start (the pass
	// re-checks under the runtime's start lock), so nothing keeps running
	// for a deleted spore. A typo deletes nothing anywhere.
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, id := range o.IDs {
			if err := wish.Delete(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := actionResults{}
	var errs []error
	for _, id := range o.IDs {
		if err := rt.Delete(ctx, id, o.PurgeHome); err != nil {
			errs = append(errs, &RuntimeError{Op: fmt.Sprintf("delete %s: removed from the store, but its processes or home could not be removed (an orphan now: run 'sporectl delete --orphan %s')", id, id), Err: err})
			continue
		}
		res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: "deleted"})
	}
	if len(res.Results) > 0 {
		if err := o.f.Print(res); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// deleteOrphans removes runtime objects that carry sporectl's marks for ids
// the store does not know. Only ids the runtime reports as orphans now are
// touched: a spore in the store is refused, an unknown id is not found.
func (o *deleteOptions) deleteOrphans(ctx context.Context, st state.Store) error {
	var known []string
	err := st.View(ctx, func(tx state.Tx) error {
		spores, err := tx.Spores(ctx)
		for _, s := range spores {
			known = append(known, s.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	rt, err := o.f.Runtime(ctx, st)
	if err != nil {
		return err
	}
	_, orphans, err := reconcile.Observe(ctx, rt, known)
	if err != nil {
		return &RuntimeError{Op: "observe orphans", Err: err}
	}
	for _, id := range o.IDs {
		switch {
		case slices.Contains(known, id):
			return usageErrorf("spore %s is in the store; delete it without --orphan", id)
		case !slices.Contains(orphans, id):
			return fmt.Errorf("orphan %s: %w", id, state.ErrNotFound)
		}
	}
	res := actionResults{}
	for _, id := range o.IDs {
		if err := rt.Delete(ctx, id, o.PurgeHome); err != nil {
			return &RuntimeError{Op: "delete orphan " + id, Err: err}
		}
		res.Results = append(res.Results, actionResult{Kind: "orphan", ID: id, Action: "deleted"})
	}
	return o.f.Print(res)
}
