// Package cli is sporectl's command line: one file per verb, each with an
// options struct, a constructor that only parses flags, and a run
// function that does the work.
package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X ...cli.version=...".
var version = "dev"

// Main runs sporectl on the process's arguments and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, programArgs(os.Args), SystemIO())
}

// Run executes one command line in-process; tests drive the CLI through it.
func Run(ctx context.Context, args []string, io IOStreams) int {
	f := NewFactory(io)
	return RunWith(ctx, f, args)
}

// RunWith is Run with a prepared factory (tests set its clock).
func RunWith(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	quietSuggestions(root, args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	return reportError(err, helpOf(cmd), f.IO.ErrOut)
}

// helpOf is the command line of the help that goes with an error of cmd
// (the command cobra found, however far it got): `sporectl colony set
// --help`, or the root's when there is none.
func helpOf(cmd *cobra.Command) string {
	if cmd == nil {
		return "sporectl --help"
	}
	return cmd.CommandPath() + " --help"
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "sporectl",
		Short: "Control plane for a colony of long-lived AI coding agents",
		Long: `sporectl runs and looks after spores: Claude Code agents, each in its own home
behind a bridge. Every command reads the store, observes reality, writes what it
decided in one transaction, and exits.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			f.storeFlagSet = cmd.Flags().Changed("store")
			return validateOutput(f.Global.Output)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.Store, "store", "", "store location: a directory or postgres://… URL (env "+EnvStore+")")
	pf.StringVarP(&f.Global.Output, "output", "o", "table", "output format: table|wide|json|yaml|name")
	pf.BoolVar(&f.Global.NoHeaders, "no-headers", false, "omit the header row of table output")
	pf.CountVarP(&f.Global.Verbose, "verbose", "v", "log to stderr (-v info, -vv debug)")
	pf.StringVar(&f.Global.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (kube runtime)")
	pf.StringVar(&f.Global.Context, "context", "", "kubeconfig context to use (kube runtime)")
	pf.StringVarP(&f.Global.Namespace, "namespace", "n", "", "Kubernetes namespace (kube runtime)")

	root.AddCommand(
		newCmdInit(f, nil),
		newCmdCreate(f, nil),
		newCmdList(f, nil),
		newCmdApply(f, nil),
		newCmdDiff(f, nil),
		newCmdExport(f, nil),
		newCmdStatus(f, nil),
		newCmdDescribe(f, nil),
		newCmdEvents(f, nil),
		newCmdLogs(f, nil),
		newCmdDelete(f, nil),
		newCmdWake(f, nil),
		newCmdSleep(f, nil),
		newCmdStop(f, nil),
		newCmdCheck(f, nil),
		newCmdRepair(f, nil),
		newCmdStore(f),
		newCmdVersion(f),
		newCmdBridge(f, nil),
		newCmdReconcile(f, nil),
		newCmdPrompt(f, nil),
		newCmdOutbox(f, nil),
		newCmdChat(f, nil),
		newCmdReset(f, nil),
		newCmdServe(f, nil),
		newCmdMycologist(f),
		newCmdSwarm(f),
		newCmdToken(f),
		newCmdSet(f),
		newCmdColony(f),
	)
	setVersionFlag(root, f)
	registerCompletions(root, f)
	// cobra adds its completion group at Execute; added now, the walk
	// below gives it the same refusal of an unknown shell. It takes its
	// writer when it is added, so that is set first.
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.InitDefaultCompletionCmd()
	refuseUnknownSubcommands(root)
	root.SetHelpCommand(helpCommand(root))
	applyExamples(root)
	return root
}
