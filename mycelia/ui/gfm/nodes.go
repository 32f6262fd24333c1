package gfm

import (
	"github.com/yuin/goldmark/ast"
)

// Align is a table column's alignment, from its delimiter cell.
type Align uint8

const (
	AlignNone   Align = iota // ---
	AlignLeft                // :--
	AlignRight               // --:
	AlignCenter              // :-:
)

func (a Align) String() string {
	switch a {
	case AlignLeft:
		return "left"
	case AlignRight:
		return "right"
	case AlignCenter:
		return "center"
	}
	return "none"
}

var (
	KindTable         = ast.NewNodeKind("GFMTable")
	KindTableRow      = ast.NewNodeKind("GFMTableRow")
	KindTableCell     = ast.NewNodeKind("GFMTableCell")
	KindStrikethrough = ast.NewNodeKind("GFMStrikethrough")
)

// Table is a table block; its children are TableRows, the header first.
type Table struct {
	ast.BaseBlock
	// Aligns has one entry a column; every row has that many cells.
	Aligns []Align
}

func (n *Table) Kind() ast.NodeKind { return KindTable }

func (n *Table) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

// TableRow is one row; its children are TableCells.
type TableRow struct {
	ast.BaseBlock
	Header bool
}

func (n *TableRow) Kind() ast.NodeKind { return KindTableRow }

func (n *TableRow) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

// TableCell is one cell. Its Lines hold the cell's text (trimmed, at most
// one segment), which goldmark's inline parser fills the cell from.
type TableCell struct {
	ast.BaseBlock
	Align Align
}

func (n *TableCell) Kind() ast.NodeKind { return KindTableCell }

func (n *TableCell) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

// Strikethrough is text between a pair of ~ or of ~~.
type Strikethrough struct {
	ast.BaseInline
}

func (n *Strikethrough) Kind() ast.NodeKind { return KindStrikethrough }

func (n *Strikethrough) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }
