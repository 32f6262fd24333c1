package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/mycelia"
)

// podTell is mycologist tell (podCommands): a message to a spore in reach.
func podTell(_ *Factory, fs *pflag.FlagSet) podCommand {
	var wake, force bool
	fs.BoolVar(&wake, "wake", false, "wake a sleeping spore to deliver it")
	fs.BoolVar(&force, "force", false, "skip the address check (the message is meant for ID even if it looks meant for another spore)")
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a spore id and the text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return sporeIDs(1)(cmd, args[:1])
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			text, err := readText(cmd, args[1])
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.Tell(ctx, args[0], text, wake, force)
				return sendResult{r}, err
			}, nil
		},
	}
}
