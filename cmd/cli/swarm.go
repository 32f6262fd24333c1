package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
)

func newCmdSwarm(f *Factory) *cobra.Command {
	co := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "swarm",
		Short: "Talk to your swarm from inside a spore: tell a teammate, loop, compact one",
		Long: `Commands a swarm member runs inside its pod, as clients of sporectl serve.
Teammates are the spores of your swarm (in your colony), addressed by role.

` + clientEnvHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	co.addFlags(cmd)
	cmd.AddCommand(newCmdSwarmTell(f, co), newCmdSwarmLoop(f, co), newCmdSwarmCompact(f, co))
	return cmd
}

func newCmdSwarmTell(f *Factory, co *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   mycelia.RouteSwarmTell.Use(),
		Short: mycelia.RouteSwarmTell.Short,
		Long:  mycelia.RouteSwarmTell.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a role and the text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("role", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[1])
			if err != nil {
				return err
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			r, err := c.SwarmTell(cmd.Context(), args[0], text)
			if err != nil {
				return err
			}
			return f.Print(sendResult{r})
		},
	}
}

func newCmdSwarmCompact(f *Factory, co *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   mycelia.RouteSwarmCompact.Use(),
		Short: mycelia.RouteSwarmCompact.Short,
		Long:  mycelia.RouteSwarmCompact.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes a role, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("role", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			r, err := c.SwarmCompact(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return f.Print(compactResult{r})
		},
	}
}

func newCmdSwarmLoop(f *Factory, co *clientOptions) *cobra.Command {
	var stop bool
	cmd := &cobra.Command{
		Use:   mycelia.RouteSwarmLoop.Use(),
		Short: mycelia.RouteSwarmLoop.Short,
		Long:  mycelia.RouteSwarmLoop.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case stop && len(args) != 0:
				return usageErrorf("%s --stop takes no interval, got %d argument(s)", cmd.CommandPath(), len(args))
			case !stop && len(args) != 1:
				return usageErrorf("%s takes an interval such as 30m (or --stop), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			every := ""
			if !stop {
				d, err := time.ParseDuration(args[0])
				if err != nil || d < time.Duration(state.MinLoop) || d > time.Duration(state.MaxLoop) {
					return usageErrorf("invalid interval %s: want a duration such as 30m, from %s to %s", quote.Value(args[0]), state.MinLoop, state.MaxLoop)
				}
				every = args[0]
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			r, err := c.SwarmLoop(cmd.Context(), every, stop)
			if err != nil {
				return err
			}
			return f.Print(loopResult{r})
		},
	}
	cmd.Flags().BoolVar(&stop, "stop", false, "end the loop")
	return cmd
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
