package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

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
		Use:   "tell ROLE TEXT|-",
		Short: "Tell the teammate with ROLE: woken if asleep, queued if working",
		Long: `Send TEXT to the spore of your swarm whose role is ROLE. It arrives as a prompt
marked "[from swarm teammate YOUR-ROLE]" that says how to answer. A sleeping
teammate is woken; a working one's bridge queues it. TEXT "-" reads stdin.`,
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
		Use:   "compact ROLE",
		Short: "Compact the context of the teammate with ROLE ([swarm] mycologist only)",
		Long: `Ask the bridge of the teammate whose role is ROLE to compact its agent's
context (/compact, queued behind the prompts it holds). Only the [swarm]
mycologist may; the teammate must be awake.`,
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
		Use:   "loop EVERY | loop --stop",
		Short: "Be prompted every EVERY (1m to 24h) to check on your swarm ([swarm] mycologist only)",
		Long: `Record a loop on your own spore: every EVERY (a duration such as 30m, from 1m
to 24h) reconcile sends you a prompt marked "[from swarm loop]" to check on
your swarm and steer it. A due time missed (you slept, no reconcile ran)
gives one prompt, not a burst. Running it again changes the interval;
--stop ends the loop. Only the [swarm] mycologist may.`,
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
					return usageErrorf("invalid interval %q: want a duration such as 30m, from %s to %s", args[0], state.MinLoop, state.MaxLoop)
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
