package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
)

func newCmdSwarm(f *Factory) *cobra.Command {
	return newPodGroup(f, "swarm", "Talk to your swarm from inside a spore: tell a teammate, loop, compact one",
		`Commands a swarm member runs inside its pod, as clients of sporectl serve.
Teammates are the spores of your swarm (in your colony), addressed by role.

`+clientEnvHelp)
}

// podSwarmTell, podSwarmLoop and podSwarmCompact are swarm's commands
// (podCommands).
func podSwarmTell(*Factory, *pflag.FlagSet) podCommand {
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a role and the text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("role", args[0])
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			text, err := readText(cmd, args[1])
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.SwarmTell(ctx, args[0], text)
				return sendResult{r}, err
			}, nil
		},
	}
}

func podSwarmCompact(*Factory, *pflag.FlagSet) podCommand {
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes a role, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("role", args[0])
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.SwarmCompact(ctx, args[0])
				return compactResult{r}, err
			}, nil
		},
	}
}

func podSwarmLoop(_ *Factory, fs *pflag.FlagSet) podCommand {
	var stop bool
	fs.BoolVar(&stop, "stop", false, "end the loop")
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case stop && len(args) != 0:
				return usageErrorf("%s --stop takes no interval, got %d argument(s)", cmd.CommandPath(), len(args))
			case !stop && len(args) != 1:
				return usageErrorf("%s takes an interval such as 30m (or --stop), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			every := ""
			if !stop {
				d, err := time.ParseDuration(args[0])
				if err != nil || d < time.Duration(state.MinLoop) || d > time.Duration(state.MaxLoop) {
					return nil, usageErrorf("invalid interval %s: want a duration such as 30m, from %s to %s", quote.Value(args[0]), state.MinLoop, state.MaxLoop)
				}
				every = args[0]
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.SwarmLoop(ctx, every, stop)
				return loopResult{r}, err
			}, nil
		},
	}
}

type loopResult struct{ mycelia.LoopResponse }

func (r loopResult) Table(bool) ([]string, [][]string) {
	if r.Every == "" {
		return nil, [][]string{{fmt.Sprintf("loop of spore/%s stopped", r.Spore)}}
	}
	return nil, [][]string{{fmt.Sprintf("loop of spore/%s every %s; next prompt due %s", r.Spore, r.Every, r.Due.Format(time.RFC3339))}}
}

func (r loopResult) Names() []string { return []string{"loop/" + r.Spore} }

type compactResult struct{ mycelia.CompactResponse }

func (r compactResult) Table(bool) ([]string, [][]string) {
	return nil, [][]string{{fmt.Sprintf("compact/%s queued at position %d by spore/%s", r.ID, r.Position, r.To)}}
}

func (r compactResult) Names() []string { return []string{"compact/" + r.ID} }
