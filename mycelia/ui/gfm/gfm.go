package gfm

import (
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Extension adds tables and strikethrough to a goldmark.Markdown.
var Extension goldmark.Extender = extension{}

type extension struct{}

// tablePriority runs after goldmark's link reference definitions (100),
// so that a definition above a table is taken out of its paragraph
// first.
const tablePriority = 200

// strikePriority puts ~ after code spans, links, autolinks and raw HTML
// (100–400), as emphasis is (500): a tilde inside those is theirs.
const strikePriority = 500

func (extension) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(
		parser.WithParagraphTransformers(util.Prioritized(tableTransformer{}, tablePriority)),
		parser.WithInlineParsers(util.Prioritized(strikeParser{}, strikePriority)),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(htmlRenderer{}, 500)))
}
