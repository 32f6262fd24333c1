package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// takesData are the groups whose first argument is data when it names no
// subcommand (outbox ID lists that spore's outbox): their own Args judge it.
var takesData = map[string]bool{"sporectl outbox": true}

// TestEveryGroupRefusesAnUnknownSubcommand walks the whole command tree:
// every group given a word that names none of its subcommands exits 2,
// says which word for which group, and which help to read; nothing is
// printed as data. Given nothing, a group prints its help and exits 0.
func TestEveryGroupRefusesAnUnknownSubcommand(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	root := NewRootCmd(NewFactory(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
	var groups []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.HasSubCommands() {
				groups = append(groups, sub)
			}
			walk(sub)
		}
	}
	walk(root)
	var paths []string
	for _, g := range groups {
		path := g.CommandPath()
		paths = append(paths, path)
		if takesData[path] {
			require.True(t, g.Runnable(), "%s runs something of its own", path)
			continue
		}
		args := append(strings.Fields(strings.TrimPrefix(path, "sporectl ")), "bogus")
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := run(t, store, args...)
			require.Equal(t, ExitUsage, r.code, r.err)
			require.Empty(t, r.out)
			require.Equal(t, "error: unknown command \"bogus\" for \""+path+"\"\nRun '"+path+" --help' for usage.\n", r.err)

			r = run(t, store, args[:len(args)-1]...)
			require.Equal(t, ExitOK, r.code, r.err)
			require.Contains(t, r.out, "Available Commands:")
		})
	}
	for _, want := range []string{"sporectl colony", "sporectl set", "sporectl store", "sporectl completion", "sporectl token", "sporectl mycologist", "sporectl swarm", "sporectl outbox"} {
		require.Contains(t, paths, want, "the walk found every group")
	}
}

// TestUnknownSubcommandSuggests: a near miss is told the near names, as
// the root's unknown commands are; completion of a shell it has no
// script for is refused.
func TestUnknownSubcommandSuggests(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	r := run(t, store, "set", "slep-after", "a", "1m")
	require.Equal(t, ExitUsage, r.code)
	require.Equal(t, "error: unknown command \"slep-after\" for \"sporectl set\"\n\nDid you mean this?\n\tsleep-after\n\nRun 'sporectl set --help' for usage.\n", r.err)

	r = run(t, store, "completion", "tcsh")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "error: unknown command \"tcsh\" for \"sporectl completion\"")
	require.Empty(t, r.out)

	r = run(t, store, "completion", "bash")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "bash completion")
}

// TestHelpOfAnUnknownTopicIsAUsageError: `help bogus` is exit 2 as
// `bogus` is; `help CMD…` prints that command's help.
func TestHelpOfAnUnknownTopicIsAUsageError(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	for _, args := range [][]string{{"help", "bogus"}, {"help", "colony", "bogus"}} {
		r := run(t, store, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Contains(t, r.err, "unknown help topic")
		require.Empty(t, r.out)
	}
	r := run(t, store, "help", "colony", "set")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "sporectl colony set NAME")
	r = run(t, store, "help")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "Available Commands")
}

// TestUsageErrorNamesItsCommandsHelp: a usage error says the help of the
// command it is about, however deep; an unknown command of the root, the
// root's.
func TestUsageErrorNamesItsCommandsHelp(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	cases := []struct {
		args []string
		help string
	}{
		{[]string{"bogus"}, "sporectl --help"},
		{[]string{"colony", "set"}, "sporectl colony set --help"},
		{[]string{"set", "budget", "a", "--bogus"}, "sporectl set budget --help"},
		{[]string{"status", "-o", "xml"}, "sporectl status --help"},
		{[]string{"--bogus"}, "sporectl --help"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, store, tc.args...)
			require.Equal(t, ExitUsage, r.code, r.err)
			require.True(t, strings.HasSuffix(r.err, "\nRun '"+tc.help+"' for usage.\n"), r.err)
		})
	}
}
