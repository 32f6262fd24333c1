package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/mycelia"
)

// podAsk is mycologist ask (podCommands): a summons of the mycologist one
// rank up.
func podAsk(*Factory, *pflag.FlagSet) podCommand {
	return podCommand{
		Args: exactText(1),
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			text, err := readText(cmd, args[0])
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.Ask(ctx, text)
				return sendResult{r}, err
			}, nil
		},
	}
}
