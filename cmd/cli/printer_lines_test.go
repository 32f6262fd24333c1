package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

type linesOnly struct{ lines []string }

func (l linesOnly) Table(bool) ([]string, [][]string) {
	return []string{"NOT"}, [][]string{{"a table"}}
}
func (l linesOnly) Names() []string { return []string{"thing/x"} }
func (l linesOnly) Lines() []string { return l.lines }

type withFooter struct{ linesOnly }

func (withFooter) Lines()           {} // hides linesOnly's: a table again
func (withFooter) Footer() []string { return []string{"# from \x1b[31mhere"} }

// A Texter's table form is its lines, each sanitized as a cell is; a
// Footer follows the table unless --no-headers. Every other format is
// the value's own.
func TestPrinterLinesAndFooter(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, printTo(&b, "table", false, linesOnly{lines: []string{"one\tcolumn", "bell \a and \x1b[2J"}}))
	require.Equal(t, "one     column\nbell \\x07 and \\x1b[2J\n", b.String())

	b.Reset()
	require.NoError(t, printTo(&b, "name", false, linesOnly{lines: []string{"x"}}))
	require.Equal(t, "thing/x\n", b.String())

	b.Reset()
	require.NoError(t, printTo(&b, "table", false, withFooter{}))
	require.Equal(t, "NOT\na table\n# from \\x1b[31mhere\n", b.String())
	b.Reset()
	require.NoError(t, printTo(&b, "table", true, withFooter{}))
	require.Equal(t, "a table\n", b.String())
}
