package gfm

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

func textReader(src []byte) text.Reader { return text.NewReader(src) }

func walkTables(n ast.Node, fn func(*Table)) {
	if t, ok := n.(*Table); ok {
		fn(t)
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		walkTables(c, fn)
	}
}
