package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return &UsageError{Msg: msg}
}
