package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestDocsNameEveryFlag reads docs/cli.md against the command tree: every
// command has a row in its table (or, for one documented in a section of
// its own, a mention), and that row names each of the command's own flags
// and aliases. The commands run inside a spore (mycologist, swarm) are
// documented in docs/mycologists.md, which must name theirs.
func TestDocsNameEveryFlag(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		require.NoError(t, err)
		return string(b)
	}
	cliDoc, mycoDoc := read("cli.md"), read("mycologists.md")
	var rows []string // the first cell and the row, of every table row
	for _, l := range strings.Split(cliDoc, "\n") {
		if strings.HasPrefix(l, "| `") {
			rows = append(rows, l)
		}
	}
	// docOf is the text that documents path ("token list"): its table row,
	// else every paragraph of docs/cli.md that names it.
	docOf := func(path string) string {
		for _, r := range rows {
			first, _, _ := strings.Cut(strings.TrimPrefix(r, "| "), " |")
			for _, form := range strings.Split(first, "`, `") {
				form = strings.Trim(form, "`")
				if form == path || strings.HasPrefix(form, path+" ") {
					return r
				}
			}
		}
		var paras []string
		for _, p := range strings.Split(cliDoc, "\n\n") {
			if strings.Contains(p, "`"+path) || strings.Contains(p, "sporectl "+path) {
				paras = append(paras, p)
			}
		}
		return strings.Join(paras, "\n\n")
	}

	root := NewRootCmd(NewFactory(IOStreams{}))
	// The global flags (and --version) are in the first section's table.
	global, _, _ := strings.Cut(cliDoc, "\n## Commands")
	for _, fs := range []*pflag.FlagSet{root.PersistentFlags(), root.Flags()} {
		fs.VisitAll(func(fl *pflag.Flag) {
			if fl.Name != "help" {
				require.Contains(t, global, "--"+fl.Name, "docs/cli.md's global flags do not name --%s", fl.Name)
			}
		})
	}
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), "sporectl ")
			top := strings.Fields(path)[0]
			t.Run(path, func(t *testing.T) {
				doc, where := docOf(path), "docs/cli.md"
				if top == "mycologist" || top == "swarm" {
					doc, where = mycoDoc, "docs/mycologists.md"
				}
				require.NotEmpty(t, doc, "%s does not document %s", where, path)
				sub.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
					if fl.Hidden || fl.Name == "help" {
						return
					}
					require.Contains(t, doc, "--"+fl.Name, "%s: the doc of %s does not name --%s", where, path, fl.Name)
					if fl.Shorthand != "" {
						require.Regexp(t, `(^|[^-\w])-`+fl.Shorthand+`\b`, doc, "%s: the doc of %s does not name -%s", where, path, fl.Shorthand)
					}
				})
				for _, a := range sub.Aliases {
					require.Contains(t, doc, "`"+a+"`", "%s: the doc of %s does not name its alias %s", where, path, a)
				}
			})
			checked++
			walk(sub)
		}
	}
	walk(root)
	require.Greater(t, checked, 30)

	// list's columns are the ones it prints.
	h, _ := sporeList{}.Table(false)
	require.Contains(t, docOf("list"), "`"+strings.Join(h, "  ")+"`")
	hw, _ := sporeList{}.Table(true)
	require.Contains(t, docOf("list"), strings.Join(hw[len(h):], ", "))
}

// TestOperationsUnitsNameRealFlags parses each ExecStart= of
// docs/operations.md's systemd units as sporectl would: the command
// exists, and its flags and their values parse; each Environment= names a
// variable sporectl reads.
func TestOperationsUnitsNameRealFlags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	units := 0
	for _, l := range strings.Split(string(b), "\n") {
		if env, ok := strings.CutPrefix(l, "Environment="); ok {
			name, _, _ := strings.Cut(env, "=")
			require.Equal(t, EnvStore, name, "docs/operations.md: %s", l)
			continue
		}
		line, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		units++
		args := strings.Fields(line)
		require.Equal(t, "sporectl", filepath.Base(args[0]), l)
		root := NewRootCmd(NewFactory(IOStreams{}))
		cmd, rest, err := root.Find(args[1:])
		require.NoError(t, err, l)
		require.NotEqual(t, root, cmd, "docs/operations.md names no command: %s", l)
		require.NoError(t, cmd.ParseFlags(rest), "docs/operations.md: %s", l)
		require.Empty(t, cmd.Flags().Args(), "docs/operations.md: arguments left: %s", l)
		for _, a := range rest {
			if name, ok := strings.CutPrefix(a, "--"); ok {
				require.True(t, cmd.Flags().Changed(name), "%s: --%s", l, name)
			}
		}
	}
	require.Equal(t, 2, units, "both units were read")
}
