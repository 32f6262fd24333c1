package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

type deleteOptions struct {
	f   *Factory
	IDs []string
}

func newCmdDelete(f *Factory) *cobra.Command {
	o := &deleteOptions{f: f}
	cmd := &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete spores from the store with their event logs and queued messages",
		Long: `Delete spores from the store: their desired state, event log, outbox and token,
all in one transaction. If any id does not exist nothing is deleted.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			return o.run(cmd.Context())
		},
	}
	return cmd
}

func (o *deleteOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
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
