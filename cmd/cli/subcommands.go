package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sporectl/sporectl/internal/quote"
)

// refuseUnknownSubcommands makes every group below root that does nothing
// of its own (colony, set, store, completion, token, …) refuse an
// argument that names none of its subcommands as a usage error (exit 2),
// as cobra does only for the root: left alone, cobra prints such a
// group's help and exits 0, so `sporectl colony bogus` looked like it
// worked. Given nothing, a group still prints its help. A group that runs
// something itself (outbox ID) checks its own arguments.
func refuseUnknownSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		refuseUnknownBelow(c)
	}
}

func refuseUnknownBelow(c *cobra.Command) {
	if !c.HasSubCommands() {
		return
	}
	for _, sub := range c.Commands() {
		refuseUnknownBelow(sub)
	}
	if c.Runnable() && c.Args != nil {
		return
	}
	c.Args = unknownSubcommand
	if !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// unknownSubcommand refuses any argument of a group, in cobra's words for
// the root's ("unknown command "x" for "sporectl colony""), with its
// suggestions.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
	}
	if len(args[0]) > maxSuggestedArg {
		return &UsageError{Msg: msg}
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return &UsageError{Msg: msg}
}

// helpCommand is `sporectl help [command]` as cobra's, but a topic that
// names no command is a usage error (exit 2), as an unknown command is;
// cobra's own prints "Unknown help topic" and the root's help, and exits 0.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type sporectl help [path to command] for full details.",
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					out = append(out, c.Name())
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return &UsageError{Msg: fmt.Sprintf("unknown help topic %s: name a command, as in 'sporectl help status'", quote.Value(strings.Join(args, " ")))}
			}
			return cmd.Help()
		},
	}
}

// quietSuggestions turns off cobra's "did you mean" when an argument is
// long: the suggestion is an edit distance to every command name, which
// over a megabyte of argument took seconds, and no command is named so.
func quietSuggestions(root *cobra.Command, args []string) {
	for _, a := range args {
		if len(a) > maxSuggestedArg {
			root.DisableSuggestions = true
			return
		}
	}
}

// maxSuggestedArg is longer than any command name by far.
const maxSuggestedArg = 256
