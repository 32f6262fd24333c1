package gfm

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
)

func render(t *testing.T, src string) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, goldmark.New(goldmark.WithExtensions(Extension)).Convert([]byte(src), &b))
	return b.String()
}

// TestTables: the cases of GFM §4.10, with the HTML this package writes.
func TestTables(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"header and one row", "| foo | bar |\n| --- | --- |\n| baz | bim |",
			"<table>\n<thead>\n<tr>\n<th>foo</th>\n<th>bar</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>baz</td>\n<td>bim</td>\n</tr>\n</tbody>\n</table>\n"},
		{"alignment, cells not lined up", "| abc | defghi |\n:-: | -----------:\nbar | baz",
			"<table>\n<thead>\n<tr>\n<th align=\"center\">abc</th>\n<th align=\"right\">defghi</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"center\">bar</td>\n<td align=\"right\">baz</td>\n</tr>\n</tbody>\n</table>\n"},
		{"left alignment", "a|b\n:--|-\n1|2",
			"<table>\n<thead>\n<tr>\n<th align=\"left\">a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"left\">1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n"},
		{"escaped pipes and inline content", "| f\\|oo  |\n| ------ |\n| b `x` **im** |",
			"<table>\n<thead>\n<tr>\n<th>f|oo</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>b <code>x</code> <strong>im</strong></td>\n</tr>\n</tbody>\n</table>\n"},
		{"a blank line ends it", "| abc | def |\n| --- | --- |\n| bar | baz |\n\nbar",
			"<table>\n<thead>\n<tr>\n<th>abc</th>\n<th>def</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>bar</td>\n<td>baz</td>\n</tr>\n</tbody>\n</table>\n<p>bar</p>\n"},
		{"another block ends it", "| abc | def |\n| --- | --- |\n| bar | baz |\n> bar",
			"<table>\n<thead>\n<tr>\n<th>abc</th>\n<th>def</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>bar</td>\n<td>baz</td>\n</tr>\n</tbody>\n</table>\n<blockquote>\n<p>bar</p>\n</blockquote>\n"},
		{"counts differ: no table", "| abc | def |\n| --- |\n| bar |",
			"<p>| abc | def |\n| --- |\n| bar |</p>\n"},
		{"missing cells are empty, extra ones dropped", "| abc | def |\n| --- | --- |\n| bar |\n| bar | baz | boo |",
			"<table>\n<thead>\n<tr>\n<th>abc</th>\n<th>def</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>bar</td>\n<td></td>\n</tr>\n<tr>\n<td>bar</td>\n<td>baz</td>\n</tr>\n</tbody>\n</table>\n"},
		{"header alone: no tbody", "| abc | def |\n| --- | --- |",
			"<table>\n<thead>\n<tr>\n<th>abc</th>\n<th>def</th>\n</tr>\n</thead>\n</table>\n"},
		{"lines above the header stay a paragraph", "Results:\n| a | b |\n|---|---|\n| 1 | 2 |",
			"<p>Results:</p>\n<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n"},
		{"a delimiter cell without a dash: no table", "| a | b |\n| : | --- |",
			"<p>| a | b |\n| : | --- |</p>\n"},
		{"no pipe: a setext heading, not a table", "a\n---", "<h2>a</h2>\n"},
		{"inside a list item", "- | a |\n  | - |\n  | 1 |",
			"<ul>\n<li>\n<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n</tr>\n</tbody>\n</table>\n</li>\n</ul>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, render(t, tc.in))
		})
	}
}

// TestStrikethrough: GFM §6.5, one or two tildes, matched by length.
func TestStrikethrough(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"~~Hi~~ Hello, world!", "<p><del>Hi</del> Hello, world!</p>\n"},
		{"~one~ tilde", "<p><del>one</del> tilde</p>\n"},
		{"~~mixed~ lengths", "<p>~~mixed~ lengths</p>\n"},
		{"a ~~~three~~~ is text", "<p>a ~~~three~~~ is text</p>\n"},
		{"This ~~has a\n\nnew paragraph~~.", "<p>This ~~has a</p>\n<p>new paragraph~~.</p>\n"},
		{"a ~~ b ~~ c", "<p>a ~~ b ~~ c</p>\n"},
		{"~~**both**~~", "<p><del><strong>both</strong></del></p>\n"},
		{"`~~code~~`", "<p><code>~~code~~</code></p>\n"},
		{"in a cell\n\n| ~~x~~ |\n|---|", "<p>in a cell</p>\n<table>\n<thead>\n<tr>\n<th><del>x</del></th>\n</tr>\n</thead>\n</table>\n"},
	} {
		require.Equal(t, tc.want, render(t, tc.in), "%q", tc.in)
	}
}

// TestCellTextIsEscaped: text in a cell reaches no attribute and no tag;
// alignment is one of the fixed values whatever the delimiter row says.
func TestCellTextIsEscaped(t *testing.T) {
	out := render(t, "| <b onclick=x> | \" align=\"x |\n|:-:|--:|\n| & | '\"' |")
	require.NotContains(t, out, "<b")
	require.NotContains(t, out, `align="x`)
	require.Contains(t, out, "&amp;")
	require.Contains(t, out, `<th align="center">`)
}

// FuzzTable: any text renders without a panic, and every table it makes
// has rows of as many cells as its header.
func FuzzTable(f *testing.F) {
	for _, s := range []string{"| a | b |\n|---|:-:|\n| 1 |", "a|b\n-|-\n\\|x|y|z", "|\n|-|\n|", "~~a~~ ~b~ ~~~c", "| `a|b` |\n|-|"} {
		f.Add(s)
	}
	md := goldmark.New(goldmark.WithExtensions(Extension))
	f.Fuzz(func(t *testing.T, s string) {
		src := []byte(s)
		doc := md.Parser().Parse(textReader(src))
		walkTables(doc, func(tbl *Table) {
			for r := tbl.FirstChild(); r != nil; r = r.NextSibling() {
				if r.ChildCount() != len(tbl.Aligns) {
					t.Fatalf("%q: a row of %d cells in a table of %d columns", s, r.ChildCount(), len(tbl.Aligns))
				}
			}
		})
		var b bytes.Buffer
		if err := md.Renderer().Render(&b, src, doc); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
