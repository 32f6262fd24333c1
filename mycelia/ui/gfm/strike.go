package gfm

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// strikeParser reads runs of ~ as delimiters that goldmark pairs as it
// pairs emphasis (left- and right-flanking, CommonMark §6.2). GFM §6.5:
// one or two tildes, an opener closed only by a run of the same length;
// three or more are text.
type strikeParser struct{}

func (strikeParser) Trigger() []byte { return []byte{'~'} }

func (strikeParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, seg := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, strikeDelimiters{})
	if d == nil {
		return nil
	}
	run := seg.WithStop(seg.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	if d.OriginalLength > 2 {
		return ast.NewTextSegment(run)
	}
	d.Segment = run
	pc.PushDelimiter(d)
	return d
}

func (strikeParser) CloseBlock(ast.Node, text.Reader, parser.Context) {}

type strikeDelimiters struct{}

func (strikeDelimiters) IsDelimiter(b byte) bool { return b == '~' }

func (strikeDelimiters) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char && opener.OriginalLength == closer.OriginalLength
}

func (strikeDelimiters) OnMatch(int) ast.Node { return &Strikethrough{} }
