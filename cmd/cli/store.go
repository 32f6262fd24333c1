package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storecopy"
)

func newCmdStore(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Work on stores as a whole",
	}
	cmd.AddCommand(newCmdStoreCopy(f, nil))
	return cmd
}

type storeCopyOptions struct {
	f        *Factory
	From, To string
}

// newCmdStoreCopy builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdStoreCopy(f *Factory, runF func(context.Context, *storeCopyOptions) error) *cobra.Command {
	o := &storeCopyOptions{f: f}
	return &cobra.Command{
		Use:   "copy FROM TO",
		Short: "Copy a colony's whole state from one store to another",
		Long: `Copy settings, spores, every event, outboxes and token hashes from the store
FROM to the store TO — a directory or a postgres:// URL each, in either
direction. TO is created if it does not exist and must hold no spores; FROM is
only read. Homes and running spores are not touched: sleep the colony first so
no command writes to FROM while it is copied.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("store copy takes two store locations, FROM and TO; got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.From, err = ResolveLocation(args[0], "FROM"); err != nil {
				return err
			}
			if o.To, err = ResolveLocation(args[1], "TO"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

func (o *storeCopyOptions) run(ctx context.Context) error {
	from, err := o.f.OpenStore(ctx, o.From)
	if err != nil {
		return fmt.Errorf("open source store: %w", err)
	}
	defer from.Close()
	var settings state.Settings
	if err := from.View(ctx, func(tx state.Tx) error {
		settings, err = tx.Settings(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("read source settings: %w", err)
	}
	to, _, err := o.f.InitStoreAt(ctx, o.To, settings)
	if err != nil {
		return fmt.Errorf("open destination store: %w", err)
	}
	defer to.Close()
	if err := storecopy.Copy(ctx, from, to); err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "store", ID: displayLocation(o.To), Action: "copied from " + displayLocation(o.From)}}})
}

// displayLocation never shows a password.
func displayLocation(loc string) string {
	if isPostgres(loc) {
		if l, err := pgstore.Location(loc); err == nil {
			return l
		}
		return "postgres://…"
	}
	return loc
}
