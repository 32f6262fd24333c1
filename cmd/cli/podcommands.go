package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/mycelia"
)

// The in-pod commands are built from the API's rows (mycelia.Routes), as
// serve's routes are: a row with a Command is a command of its group
// ("mycologist tell" is tell under mycologist), named, used and helped
// by the row. What a row cannot say — how the command checks its
// arguments, its flags, and which client call it makes — is its entry in
// podCommands. Adding a route with an in-pod command is a row and an
// entry; no cobra command is written by hand.

// podCommand is what an in-pod command adds to its row.
type podCommand struct {
	// Args checks the arguments (nil: none are taken).
	Args cobra.PositionalArgs
	// Call reads the arguments and the flags' values, refusing bad ones
	// with a usage error before serve is called, and returns the call.
	Call func(cmd *cobra.Command, args []string) (podCall, error)
}

// podCall calls serve and returns what to print.
type podCall func(ctx context.Context, c *mycelia.Client) (Printable, error)

// podBinder adds a command's flags to fs and returns the command bound
// to their values.
type podBinder func(f *Factory, fs *pflag.FlagSet) podCommand

// podCommands are the in-pod commands, by row. A row with a Command and
// no entry (or an entry for a row without one) fails every test that
// builds the root command.
var podCommands = map[*mycelia.Route]podBinder{
	mycelia.RouteSummons:      podAsk,
	mycelia.RouteSpores:       podSpores,
	mycelia.RouteSpore:        podSpore,
	mycelia.RouteTell:         podTell,
	mycelia.RouteCollisions:   podCollisions,
	mycelia.RouteDeploys:      podDeploys,
	mycelia.RouteReport:       podReport,
	mycelia.RouteHosts:        podHosts,
	mycelia.RouteHostLogs:     podHostLogs,
	mycelia.RouteSwarmTell:    podSwarmTell,
	mycelia.RouteSwarmLoop:    podSwarmLoop,
	mycelia.RouteSwarmCompact: podSwarmCompact,
}

// newPodGroup is the command group ("mycologist", "swarm") with the
// commands of its rows, in the rows' order.
func newPodGroup(f *Factory, group, short, long string) *cobra.Command {
	co := &clientOptions{}
	cmd := &cobra.Command{
		Use:   group,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	co.addFlags(cmd)
	for _, rt := range podRoutes(group) {
		cmd.AddCommand(newPodCommand(f, co, rt))
	}
	return cmd
}

// podRoutes are the rows whose command is in group, checked against
// podCommands both ways.
func podRoutes(group string) []*mycelia.Route {
	var rts []*mycelia.Route
	rows := map[*mycelia.Route]bool{}
	for _, rt := range mycelia.Routes {
		if rt.Command == "" {
			continue
		}
		rows[rt] = true
		if _, ok := podCommands[rt]; !ok {
			panic(fmt.Sprintf("route %s has the in-pod command %q but podCommands has no entry for it", rt.Name, rt.Command))
		}
		if g, _, _ := strings.Cut(rt.Command, " "); g == group {
			rts = append(rts, rt)
		}
	}
	for rt := range podCommands {
		if !rows[rt] {
			panic(fmt.Sprintf("podCommands has an entry for route %s, which is not a row with an in-pod command", rt.Name))
		}
	}
	return rts
}

// newPodCommand is rt's command: its name, usage and help from the row,
// its checks, flags and call from its entry; the client from the
// environment, once the arguments are good.
func newPodCommand(f *Factory, co *clientOptions, rt *mycelia.Route) *cobra.Command {
	cmd := &cobra.Command{
		Use:   rt.Use(),
		Short: rt.Short,
		Long:  rt.Long,
	}
	pc := podCommands[rt](f, cmd.Flags())
	cmd.Args = pc.Args
	if cmd.Args == nil {
		cmd.Args = cobra.NoArgs
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		call, err := pc.Call(cmd, args)
		if err != nil {
			return err
		}
		c, err := f.apiClient(co)
		if err != nil {
			return err
		}
		p, err := call(cmd.Context(), c)
		if err != nil {
			return err
		}
		return f.Print(p)
	}
	return cmd
}
