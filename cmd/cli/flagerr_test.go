package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestBadFlagValues: every int, uint, float, duration, bool and count flag
// of every command refuses a value it cannot parse with exit 2 and a
// message naming the flag and what it wants, never Go's strconv text.
func TestBadFlagValues(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	wants := map[string]string{
		"int": "want a whole number", "int64": "want a whole number", "count": "want a whole number",
		"uint64": "want a whole number, 0 or more", "uint": "want a whole number, 0 or more",
		"float64": "want a number", "duration": "want a duration such as 30s", "bool": "want true or false",
	}
	type flagCase struct{ path, name, typ string }
	var cases []flagCase
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(fl *pflag.Flag) {
			key := c.CommandPath() + " --" + fl.Name
			if _, ok := wants[fl.Value.Type()]; ok && !seen[key] {
				seen[key] = true
				cases = append(cases, flagCase{c.CommandPath(), fl.Name, fl.Value.Type()})
			}
		}
		c.Flags().VisitAll(visit)
		c.InheritedFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(NewFactory(IOStreams{})))
	require.Greater(t, len(cases), 20, "the walk found the flags")
	types := map[string]bool{}
	for _, c := range cases {
		types[c.typ] = true
		t.Run(c.path+" --"+c.name, func(t *testing.T) {
			args := append(strings.Fields(c.path)[1:], "--"+c.name+"=x")
			r := run(t, store, args...)
			require.Equal(t, ExitUsage, r.code, "stderr: %s", r.err)
			require.Contains(t, r.err, `invalid value "x" for --`+c.name+": "+wants[c.typ])
			require.NotContains(t, r.err, "strconv")
			require.NotContains(t, r.err, "parsing")
		})
	}
	for _, typ := range []string{"int", "uint64", "duration", "bool", "count"} {
		require.True(t, types[typ], "no %s flag found: the walk is broken", typ)
	}
}

func TestBadFlagValueWords(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"events", "a", "--tail", "x"}, `invalid value "x" for --tail: want a whole number` + "\n"},
		{[]string{"events", "a", "--since", "-1"}, `invalid value "-1" for --since: want a whole number, 0 or more` + "\n"},
		{[]string{"events", "a", "--tail", "99999999999999999999"}, `invalid value "99999999999999999999" for --tail: want a whole number from -9223372036854775808 to 9223372036854775807` + "\n"},
		{[]string{"wake", "a", "--wait", "5"}, `invalid value "5" for --wait: want a duration such as 30s, 5m or 1h30m` + "\n"},
		{[]string{"chat", "a", "-f=maybe"}, `invalid value "maybe" for --follow: want true or false` + "\n"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := run(t, store, c.args...)
			require.Equal(t, ExitUsage, r.code)
			require.Equal(t, "error: "+c.want+"Run 'sporectl "+c.args[0]+" --help' for usage.\n", r.err, "the help of the command the flag is of")
		})
	}
}

func TestFlagBounds(t *testing.T) {
	for typ, want := range map[string]string{
		"int8": "from -128 to 127", "int": "from -9223372036854775808 to 9223372036854775807",
		"uint16": "from 0 to 65535", "uint": "from 0 to 18446744073709551615",
	} {
		require.Equal(t, want, bounds(typ), typ)
	}
}

// TestHugeValuesAreQuotedShort: a 30 MB value given to a flag or as a
// spore id is quoted in the error by a short prefix and its length, the
// flag or field still named (internal/quote).
func TestHugeValuesAreQuotedShort(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	big := strings.Repeat("x", 30<<20)
	for _, c := range []struct {
		args []string
		name string // the flag or field the error names
	}{
		{[]string{"chat", "a", "--since", big}, "for --since: want a whole number"},
		{[]string{"create", "a", "--cpu", big}, "for --cpu:"},
		{[]string{"create", "a", "--node-selector", big}, "for --node-selector: want KEY=VALUE"},
		{[]string{"list", "-o", big}, "for -o: use one of"},
		{[]string{"events", big}, "invalid spore id"},
	} {
		t.Run(strings.Join(c.args[:len(c.args)-1], " "), func(t *testing.T) {
			r := run(t, store, c.args...)
			require.Equal(t, ExitUsage, r.code, "%.300s", r.err)
			require.Less(t, len(r.err), 400, "%.600s", r.err)
			require.Contains(t, r.err, c.name)
			require.Contains(t, r.err, "(31457280 bytes)")
		})
	}
}
