package gfm

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// htmlRenderer writes the nodes of this package as HTML. Alignment is an
// align attribute, not a style one: the page's Content-Security-Policy
// refuses inline styles.
type htmlRenderer struct{}

func (htmlRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(KindTable, renderTable)
	reg.Register(KindTableRow, renderRow)
	reg.Register(KindTableCell, renderCell)
	reg.Register(KindStrikethrough, renderStrike)
}

func renderTable(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = w.WriteString("<table>\n")
		return ast.WalkContinue, nil
	}
	if n.ChildCount() > 1 {
		_, _ = w.WriteString("</tbody>\n")
	}
	_, _ = w.WriteString("</table>\n")
	return ast.WalkContinue, nil
}

// renderRow wraps the header row in thead and opens tbody before the
// first body row; renderTable closes it.
func renderRow(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	row := n.(*TableRow)
	if entering {
		if row.Header {
			_, _ = w.WriteString("<thead>\n")
		} else if prev, ok := row.PreviousSibling().(*TableRow); ok && prev.Header {
			_, _ = w.WriteString("<tbody>\n")
		}
		_, _ = w.WriteString("<tr>\n")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString("</tr>\n")
	if row.Header {
		_, _ = w.WriteString("</thead>\n")
	}
	return ast.WalkContinue, nil
}

func renderCell(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	cell := n.(*TableCell)
	tag := "td"
	if row, ok := cell.Parent().(*TableRow); ok && row.Header {
		tag = "th"
	}
	if !entering {
		_, _ = w.WriteString("</" + tag + ">\n")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString("<" + tag)
	if cell.Align != AlignNone {
		_, _ = w.WriteString(` align="` + cell.Align.String() + `"`)
	}
	_, _ = w.WriteString(">")
	return ast.WalkContinue, nil
}

func renderStrike(w util.BufWriter, _ []byte, _ ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = w.WriteString("<del>")
	} else {
		_, _ = w.WriteString("</del>")
	}
	return ast.WalkContinue, nil
}
