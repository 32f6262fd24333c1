package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

type deleteOptions struct {
	f         *Factory
	IDs       []string
	PurgeHome bool
}

func newCmdDelete(f *Factory) *cobra.Command {
	o := &deleteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete spores from the store with their event logs and queued messages",
		Long: `Delete spores: end their processes (pod, or process tree) and remove them from
the store — desired state, event log, outbox and token — in one transaction.
Their homes are kept unless --purge-home. If any id does not exist nothing is
deleted.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.PurgeHome, "purge-home", false, "also delete the spores' homes (files, git work, Claude's session)")
	return cmd
}

func (o *deleteOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// Check every id first, so a typo deletes nothing anywhere.
	err = st.View(ctx, func(tx state.Tx) error {
		for _, id := range o.IDs {
			if _, err := tx.Spore(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rt, err := o.f.Runtime(ctx, st)
	if err != nil {
		return err
	}
	// The runtime goes first: a spore still in the store with nothing
	// running is retried safely; a running spore missing from the store
	// would be an orphan.
	for _, id := range o.IDs {
		if err := rt.Delete(ctx, id, o.PurgeHome); err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
	}
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, id := range o.IDs {
			if err := tx.DeleteSpore(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := actionResults{}
	for _, id := range o.IDs {
		res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: "deleted"})
	}
	return o.f.Print(res)
}
