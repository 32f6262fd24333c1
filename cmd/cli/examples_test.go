package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// Every command of the tree, groups and the root included, has examples
// in its --help, and every example line parses as the command it is
// listed under: its path found, its flags known and well formed, its
// arguments taken by the command's own checks. Nothing runs.
func TestEveryCommandHasExamplesThatParse(t *testing.T) {
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(NewFactory(IOStreams{})))
	keys := map[string]bool{}
	for _, c := range cmds {
		key := examplesKey(c)
		keys[key] = true
		require.NotEmpty(t, c.Example, "%q has no example: add it to examples in examples.go", c.CommandPath())
		for _, line := range strings.Split(examples[key], "\n") {
			t.Run(line, func(t *testing.T) {
				args, err := splitExample(line)
				require.NoError(t, err)
				require.Equal(t, "sporectl", args[0], "an example starts with sporectl")
				// A fresh tree for each line: parsing sets flags.
				root := NewRootCmd(NewFactory(IOStreams{}))
				found, rest, err := root.Find(args[1:])
				require.NoError(t, err)
				if key != "" {
					// A group's examples show its subcommands.
					require.True(t, found.CommandPath() == c.CommandPath() || strings.HasPrefix(found.CommandPath(), c.CommandPath()+" "),
						"%q is listed under %q but runs %q", line, c.CommandPath(), found.CommandPath())
				}
				require.NoError(t, found.ParseFlags(rest), "flags")
				if found.Runnable() {
					require.NoError(t, found.ValidateArgs(found.Flags().Args()), "arguments")
				}
			})
		}
	}
	for key := range examples {
		require.True(t, keys[key], "examples has %q, which is no command", key)
	}
}

// splitExample splits an example line as a shell would split it: words
// apart on blanks, single and double quotes kept together, a "#" that
// starts a word and all after it a comment.
func splitExample(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		case strings.ContainsRune("|<>$`;&", r):
			return nil, fmt.Errorf("%q: an example is one command, with no %q", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: a quote is not closed", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
