package ui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	xhtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/sporectl/sporectl/state"
)

// elements parses a fragment the way a browser does and lists every
// element with its attributes, "tag" or "tag attr=value …".
func elements(t *testing.T, frag string) []string {
	t.Helper()
	nodes, err := xhtml.ParseFragment(strings.NewReader(frag), &xhtml.Node{Type: xhtml.ElementNode, Data: "div", DataAtom: atom.Div})
	require.NoError(t, err)
	var out []string
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.ElementNode {
			s := n.Data
			for _, a := range n.Attr {
				s += " " + a.Key + "=" + a.Val
			}
			out = append(out, s)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}

func render(s string) string {
	h, _ := markdownHTML(s)
	return string(h)
}

// TestMarkdownXSS: hostile markdown makes no element or attribute of its
// own, only the ones markdown itself means, and shows raw HTML as text.
func TestMarkdownXSS(t *testing.T) {
	for in, want := range map[string][]string{
		`<script>alert(1)</script>`:                          nil,
		"<img src=x onerror=alert(1)>":                       nil,
		"text <img src=x onerror=alert(1)> more":             nil,
		"<a href=\"javascript:alert(1)\">x</a>":              nil,
		"see <a href=http://evil/>here</a>":                  nil,
		"[x](javascript:alert(1))":                           nil,
		"[x](JaVaScRiPt:alert(1))":                           nil,
		"[x](jav&#x61;script:alert(1))":                      nil,
		"[x](data:text/html;base64,PHNjcmlwdD4=)":            nil,
		"[x](/ui/spores/other)":                              nil,
		"<javascript:alert(1)>":                              nil,
		"&lt;script&gt;alert(1)&lt;/script&gt;":              nil,
		"![](http://evil/)":                                  {"a href=http://evil/ rel=nofollow noopener noreferrer"},
		"![alt](javascript:alert(1))":                        nil,
		"![x](data:image/png;base64,AAAA)":                   nil,
		"<style>body{display:none}</style>\n\nsecond":        {"p class=html", "p"},
		"<div onmouseover=alert(1)>\n*hi*\n</div>":           nil,
		"`<script>` and\n\n```html\n<script>x</script>\n```": {"p", "code", "pre", "code class=language-html"},
		"[ok](https://example.com/a?b=1&c=\"2\")":            {"a href=https://example.com/a?b=1&c=%222%22 rel=nofollow noopener noreferrer"},
		"<https://example.com>":                              {"a href=https://example.com rel=nofollow noopener noreferrer"},
		"<someone@example.com>":                              {"a href=mailto:someone@example.com rel=nofollow noopener noreferrer"},
		"x {onclick=alert(1)}":                               nil,
		"# Title {#id onclick=alert(1)}":                     {"h3"},
	} {
		out := render(in)
		require.Equal(t, want, elements(t, out), "%q rendered %q", in, out)
		require.NotRegexp(t, regexp.MustCompile(`(?i)<(script|img|style|iframe|div)`), out, in)
	}
	// Raw HTML is shown as what it is.
	require.Equal(t, "&lt;script&gt;alert(1)&lt;/script&gt;", render(xss))
	require.Equal(t, "text &lt;img src=x onerror=alert(1)&gt; more", render("text <img src=x onerror=alert(1)> more"))
	// An entity stays the text it stands for, escaped again.
	require.Equal(t, "&lt;script&gt;", render("&lt;script&gt;"))
	require.Equal(t, "x", render("[x](javascript:alert(1))"))
}

// TestMarkdownRenders: what markdown means reaches the page.
func TestMarkdownRenders(t *testing.T) {
	out, inline := markdownHTML("# Plan\n\nSome *emphasis*, **strong**, `code`.\n\n- one\n- two\n\n1. first\n\n```go\nfunc main() {}\n```\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n###### six")
	require.False(t, inline)
	require.Equal(t, []string{"h3", "p", "em", "strong", "code", "ul", "li", "li", "ol", "li", "pre", "code class=language-go",
		"table", "thead", "tr", "th align=left", "th align=right", "tbody", "tr", "td align=left", "td align=right", "h6"},
		elements(t, string(out)))
	require.Contains(t, string(out), "func main() {}")

	// One paragraph has no element of its own, and keeps its line breaks.
	out, inline = markdownHTML("Looking at it.\nFirst the test.")
	require.True(t, inline)
	require.Equal(t, "Looking at it.\nFirst the test.", string(out))
	out, inline = markdownHTML("two\n\nparagraphs")
	require.False(t, inline)
	require.Equal(t, "<p>two</p>\n<p>paragraphs</p>", string(out))
}

// TestTextLinesRenderAsMarkdown: on the page only the agent's text is
// markdown; a prompt saying the same stays text.
func TestTextLinesRenderAsMarkdown(t *testing.T) {
	f := newFixture(t)
	f.add(stateSpore("md"), false, prompt(1, "user:a", "*not markdown*"), text(2, "*markdown*\n\n[x](javascript:alert(1))"))
	a := f.get("/ui/spores/md")
	require.Contains(t, a.body, `<span class="text">*not markdown*</span>`)
	require.Contains(t, a.body, `<div class="text md"><p><em>markdown</em></p>`+"\n<p>x</p></div>")
	require.NotContains(t, a.body, "javascript:")
}

func stateSpore(id string) state.Spore {
	return state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore}}
}
