package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/mycelia"
)

// askOptions are mycologist ask's: a summons of the mycologist one rank up.
type askOptions struct {
	f    *Factory
	co   *clientOptions
	Text string
}

func newCmdAsk(f *Factory, co *clientOptions, runF func(context.Context, *askOptions) error) *cobra.Command {
	o := &askOptions{f: f, co: co}
	return &cobra.Command{
		Use:   mycelia.RouteSummons.Use(),
		Short: mycelia.RouteSummons.Short,
		Long:  mycelia.RouteSummons.Long,
		Args:  exactText(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[0])
			if err != nil {
				return err
			}
			o.Text = text
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			c, err := f.apiClient(o.co)
			if err != nil {
				return err
			}
			r, err := c.Ask(cmd.Context(), o.Text)
			if err != nil {
				return err
			}
			return f.Print(sendResult{r})
		},
	}
}
