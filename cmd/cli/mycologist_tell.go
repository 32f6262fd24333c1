package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/mycelia"
)

// tellOptions are mycologist tell's: a message to a spore in reach.
type tellOptions struct {
	f     *Factory
	co    *clientOptions
	ID    string
	Text  string
	Wake  bool
	Force bool
}

func newCmdTell(f *Factory, co *clientOptions, runF func(context.Context, *tellOptions) error) *cobra.Command {
	o := &tellOptions{f: f, co: co}
	cmd := &cobra.Command{
		Use:   mycelia.RouteTell.Use(),
		Short: mycelia.RouteTell.Short,
		Long:  mycelia.RouteTell.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a spore id and the text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return sporeIDs(1)(cmd, args[:1])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[1])
			if err != nil {
				return err
			}
			o.ID, o.Text = args[0], text
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			c, err := f.apiClient(o.co)
			if err != nil {
				return err
			}
			r, err := c.Tell(cmd.Context(), o.ID, o.Text, o.Wake, o.Force)
			if err != nil {
				return err
			}
			return f.Print(sendResult{r})
		},
	}
	cmd.Flags().BoolVar(&o.Wake, "wake", false, "wake a sleeping spore to deliver it")
	cmd.Flags().BoolVar(&o.Force, "force", false, "skip the address check (the message is meant for ID even if it looks meant for another spore)")
	return cmd
}
