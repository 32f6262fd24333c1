package gfm

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// tableTransformer turns a paragraph holding a table into a Table. A
// table is a header row, a delimiter row with as many cells, and every
// line of the paragraph after them as a body row (GFM §4.10): the
// paragraph already ends where the spec says a table does, at a blank
// line or another block.
type tableTransformer struct{}

func (tableTransformer) Transform(para *ast.Paragraph, reader text.Reader, _ parser.Context) {
	lines := para.Lines()
	source := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		aligns, ok := delimiterRow(lineBytes(source, lines.At(i)))
		if !ok {
			continue
		}
		headSeg := lines.At(i - 1)
		head, pipe := splitRow(lineBytes(source, headSeg))
		if !pipe || len(head) != len(aligns) {
			continue // the spec: no table unless the counts match
		}
		table := &Table{Aligns: aligns}
		table.AppendChild(table, newRow(head, headSeg, aligns, true))
		for j := i + 1; j < lines.Len(); j++ {
			seg := lines.At(j)
			cells, _ := splitRow(lineBytes(source, seg))
			table.AppendChild(table, newRow(cells, seg, aligns, false))
		}
		parent := para.Parent()
		parent.InsertAfter(parent, para, table)
		if i == 1 {
			parent.RemoveChild(parent, para) // goldmark then skips closing it
		} else {
			lines.SetSliced(0, i-1) // the lines above the header stay a paragraph
		}
		return
	}
}

// lineBytes is a line's bytes in the source. Not Segment.Value, which
// prepends a tab's padding: the cells' offsets must be the source's.
func lineBytes(source []byte, seg text.Segment) []byte {
	return source[seg.Start:seg.Stop]
}

// newRow makes a row of exactly len(aligns) cells: the spec drops a body
// row's extra cells and fills its missing ones with empty cells.
func newRow(cells []span, seg text.Segment, aligns []Align, header bool) *TableRow {
	row := &TableRow{Header: header}
	for k, a := range aligns {
		cell := &TableCell{Align: a}
		if k < len(cells) && cells[k].stop > cells[k].start {
			cell.Lines().Append(text.NewSegment(seg.Start+cells[k].start, seg.Start+cells[k].stop))
		}
		row.AppendChild(row, cell)
	}
	return row
}

// span is a cell's text as offsets into its line.
type span struct{ start, stop int }

// splitRow splits a line into its cells at the pipes not escaped by a
// backslash, a leading and a trailing pipe being optional, each cell
// trimmed of spaces and tabs. pipe reports whether the line had one.
func splitRow(line []byte) (cells []span, pipe bool) {
	start, stop := 0, len(line)
	for stop > start && isSpace(line[stop-1]) {
		stop--
	}
	for start < stop && isSpace(line[start]) {
		start++
	}
	if start < stop && line[start] == '|' {
		start++
		pipe = true
	}
	if stop > start && line[stop-1] == '|' && !escaped(line, stop-1) {
		stop--
		pipe = true
	}
	from := start
	for i := start; i < stop; i++ {
		switch line[i] {
		case '\\':
			i++ // the next byte is escaped, a pipe as well
		case '|':
			cells = append(cells, trimSpan(line, from, i))
			from = i + 1
			pipe = true
		}
	}
	return append(cells, trimSpan(line, from, stop)), pipe
}

// delimiterRow reads a delimiter row: cells of one or more '-', each with
// an optional ':' on either side, and at least one pipe.
func delimiterRow(line []byte) ([]Align, bool) {
	cells, pipe := splitRow(line)
	if !pipe {
		return nil, false
	}
	aligns := make([]Align, len(cells))
	for k, c := range cells {
		s := line[c.start:c.stop]
		left := len(s) > 0 && s[0] == ':'
		if left {
			s = s[1:]
		}
		right := len(s) > 0 && s[len(s)-1] == ':'
		if right {
			s = s[:len(s)-1]
		}
		if len(s) == 0 {
			return nil, false
		}
		for _, b := range s {
			if b != '-' {
				return nil, false
			}
		}
		switch {
		case left && right:
			aligns[k] = AlignCenter
		case left:
			aligns[k] = AlignLeft
		case right:
			aligns[k] = AlignRight
		}
	}
	return aligns, true
}

func trimSpan(line []byte, start, stop int) span {
	for start < stop && isSpace(line[start]) {
		start++
	}
	for stop > start && isSpace(line[stop-1]) {
		stop--
	}
	return span{start, stop}
}

// escaped reports whether line[i] follows an odd number of backslashes.
func escaped(line []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && line[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
