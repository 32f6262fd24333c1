package ui

import (
	"bytes"
	"html"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	gtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/sporectl/sporectl/internal/lazy"
	"github.com/sporectl/sporectl/mycelia/ui/gfm"
)

// md renders the agent's text. Agent text is hostile, so the renderer is
// goldmark's CommonMark (tables and strikethrough added by package gfm,
// not goldmark's extension package, whose init costs every command of the
// binary: docs/performance.md) with the nodes
// that could reach outside the page replaced by safeRenderer:
//
//   - raw HTML, inline or as a block, is shown as the text it is (the
//     reader sees what the agent wrote), never passed through;
//   - a link keeps its href only for http, https and mailto, with
//     rel="nofollow noopener noreferrer"; any other is its text alone;
//   - an image is never loaded: it becomes a link to its address (same
//     schemes), or its alt text;
//   - headings are demoted two levels, so an agent's "# Title" never
//     outranks the page's h1 or its section h2s.
//
// Attributes syntax ({#id .class}) is off (goldmark's default), so no
// element gets an attribute from the text; table alignment is an align
// attribute, not a style one the Content-Security-Policy would refuse.
//
// It is built on first use: only the page renders markdown.
var md = lazy.New("ui.markdown", func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(gfm.Extension),
		goldmark.WithRendererOptions(
			renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 100)),
		),
	)
})

// markdownHTML renders text as markdown. Its output is the only
// template.HTML the page makes from what it read. A text that is one
// paragraph (or one block of raw HTML) comes without a wrapping element,
// so that short lines stay as compact as every other line of the
// conversation; inline is then true.
func markdownHTML(s string) (out template.HTML, inline bool) {
	src := []byte(s)
	m := md()
	doc := m.Parser().Parse(gtext.NewReader(src))
	inline = doc.ChildCount() == 1 && (doc.FirstChild().Kind() == ast.KindParagraph || doc.FirstChild().Kind() == ast.KindHTMLBlock)
	var b bytes.Buffer
	if err := m.Renderer().Render(&b, src, doc); err != nil {
		// The renderer writes to memory and fails on nothing; should it
		// ever, the text is shown as text.
		return template.HTML(html.EscapeString(s)), false
	}
	return template.HTML(strings.TrimRight(b.String(), "\n")), inline
}

// safeRenderer renders the nodes that the default renderer would pass
// through or load (see md).
type safeRenderer struct{}

func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindHeading, renderHeading)
	reg.Register(ast.KindParagraph, renderParagraph)
}

// linkRel is every link's rel: the target learns nothing of the page and
// gets no handle on it.
const linkRel = `rel="nofollow noopener noreferrer"`

// safeURL reports whether u (as it will be written into href) is one the
// page links to. An allowlist: anything else (javascript:, data:, a
// relative path into this server) is not a link.
func safeURL(u []byte) bool {
	s := strings.ToLower(string(u))
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "mailto:")
}

func writeLinkStart(w util.BufWriter, url []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(url))
	_, _ = w.WriteString(`" ` + linkRel + `>`)
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
		}
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.HTMLBlock)
	var b bytes.Buffer
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		b.Write(seg.Value(source))
	}
	if n.HasClosure() {
		b.Write(n.ClosureLine.Value(source))
	}
	text := util.EscapeHTML(bytes.TrimRight(b.Bytes(), "\n"))
	if alone(node) {
		_, _ = w.Write(text)
	} else {
		_, _ = w.WriteString(`<p class="html">`)
		_, _ = w.Write(text)
		_, _ = w.WriteString("</p>\n")
	}
	return ast.WalkSkipChildren, nil
}

func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	dest := util.URLEscape(node.(*ast.Link).Destination, true)
	if !safeURL(dest) {
		return ast.WalkContinue, nil // the link's text, as text
	}
	if entering {
		writeLinkStart(w, dest)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	url := util.URLEscape(n.URL(source), false)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
		url = append([]byte("mailto:"), url...)
	}
	label := util.EscapeHTML(n.Label(source))
	if !safeURL(url) {
		_, _ = w.Write(label)
		return ast.WalkContinue, nil
	}
	writeLinkStart(w, url)
	_, _ = w.Write(label)
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// renderImage writes an image as a link to it (labelled with its alt
// text, or "image"), or as its alt text when its address is not one the
// page links to: the page loads nothing from anywhere (img-src 'self').
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	var alt bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			alt.Write(t.Segment.Value(source))
		} else if s, ok := c.(*ast.String); ok {
			alt.Write(s.Value)
		}
	}
	label := "image"
	if alt.Len() > 0 {
		label = "image: " + alt.String()
	}
	dest := util.URLEscape(n.Destination, true)
	if safeURL(dest) {
		writeLinkStart(w, dest)
		_, _ = w.Write(util.EscapeHTML([]byte(label)))
		_, _ = w.WriteString("</a>")
	} else {
		_, _ = w.Write(util.EscapeHTML([]byte("[" + label + "]")))
	}
	return ast.WalkSkipChildren, nil
}

// renderHeading demotes a heading two levels (h1 → h3, h5 and h6 → h6).
func renderHeading(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	level := min(node.(*ast.Heading).Level+2, 6)
	tag := "h" + string(rune('0'+level))
	if entering {
		_, _ = w.WriteString("<" + tag + ">")
	} else {
		_, _ = w.WriteString("</" + tag + ">\n")
	}
	return ast.WalkContinue, nil
}

// renderParagraph is the default's, except that a paragraph that is the
// whole text has no element of its own (see markdownHTML).
func renderParagraph(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if alone(node) {
		return ast.WalkContinue, nil
	}
	if entering {
		_, _ = w.WriteString("<p>")
	} else {
		_, _ = w.WriteString("</p>\n")
	}
	return ast.WalkContinue, nil
}

// alone reports whether node is the document's only block.
func alone(node ast.Node) bool {
	p := node.Parent()
	return p != nil && p.Kind() == ast.KindDocument && p.ChildCount() == 1
}
