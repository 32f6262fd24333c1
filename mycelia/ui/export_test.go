package ui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/state"
)

// exportOf runs a read-only pass and exports what it saw.
func (f *fixture) export(now time.Time, prev ...map[string]string) map[string][]byte {
	f.t.Helper()
	out, err := f.h.Pass.Run(context.Background(), reconcile.Options{})
	require.NoError(f.t, err)
	var stamps map[string]string
	if len(prev) > 0 {
		stamps = prev[0]
	}
	files, err := Export(context.Background(), f.st, out.Result, now, stamps)
	require.NoError(f.t, err)
	return files
}

// elements lists every element of doc, by tag.
func exportElements(t *testing.T, page []byte) map[string][]*html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(page)))
	require.NoError(t, err)
	out := map[string][]*html.Node{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			out[n.Data] = append(out[n.Data], n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// TestExport: the fleet and each spore are files that link to each other
// and to their stylesheets, with no script, form or link to the server;
// relative times are written out; hostile text stays text; and an export
// of an unchanged store is the same bytes an hour later minus a minute.
func TestExport(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.add(state.Spore{Wish: state.Wish{ID: "evil", Colony: "lab", Rank: state.RankSpore}}, true,
		prompt(1, "user:"+xss, "please "+xss),
		text(2, "here is "+xss+" and [a link](javascript:alert(1))\n<img src=x onerror=alert(2)>"))
	now := t0.Add(3 * time.Hour)
	files := f.export(now)

	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	require.Equal(t, []string{"index.html",
		"spores/arch.html", "spores/evil.html", "spores/far-x.html", "spores/lab-a.html", "spores/lab-b.html", "spores/lab-c.html",
		"spores/stamps.json", "static/fleet.css", "static/forms.css", "static/ui.css"}, names)

	for name, b := range files {
		if !strings.HasSuffix(name, ".html") {
			continue
		}
		els := exportElements(t, b)
		for _, tag := range []string{"script", "form", "img", "input", "textarea", "iframe"} {
			require.Empty(t, els[tag], "%s: a <%s>", name, tag)
		}
		up := ""
		if strings.HasPrefix(name, "spores/") {
			up = "../"
		}
		var csp bool
		for _, m := range els["meta"] {
			if attr(m, "http-equiv") == "Content-Security-Policy" {
				csp = true
				require.Contains(t, attr(m, "content"), "script-src 'none'")
			}
		}
		require.True(t, csp, "%s: no Content-Security-Policy", name)
		for _, l := range els["link"] {
			require.True(t, strings.HasPrefix(attr(l, "href"), up+"static/"), "%s: %s", name, attr(l, "href"))
		}
		for _, a := range els["a"] {
			href := attr(a, "href")
			require.False(t, strings.HasPrefix(href, "/"), "%s: a link to the server: %s", name, href)
			require.False(t, strings.HasPrefix(strings.ToLower(href), "javascript:"), "%s: %s", name, href)
			if strings.HasPrefix(href, up+"spores/") || href == up+"index.html" || href == "" {
				continue
			}
			require.True(t, strings.HasPrefix(href, "http"), "%s: %q", name, href)
		}
		require.NotContains(t, string(b), "ago<", "%s: a relative time", name)
		require.NotContains(t, string(b), xss, name)
	}
	index := string(files["index.html"])
	require.Contains(t, index, `href="spores/lab-a.html"`)
	require.Contains(t, index, "2026-")
	spore := string(files["spores/evil.html"])
	require.Contains(t, spore, `href="../index.html"`)
	require.Contains(t, spore, "please &lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, string(files["spores/lab-a.html"]), "Fix the flaky test.")

	again := f.export(now.Add(59 * time.Minute).Truncate(time.Hour).Add(59 * time.Minute))
	require.Equal(t, files, again, "an unchanged store exports the same bytes within the hour")

	// With the stamps of that export, nothing is rendered again; a new
	// line renders that spore's page and the index, nothing else; the next
	// hour renders everything again (activity is counted by the hour).
	var stamps map[string]string
	require.NoError(t, json.Unmarshal(files[ExportStamps], &stamps))
	same := f.export(now, stamps)
	for name, b := range same {
		if name != ExportStamps && strings.HasSuffix(name, ".html") {
			require.Nil(t, b, "%s rendered again", name)
		}
	}
	f.append("lab-b", text(200, "awake again"))
	after := f.export(now, stamps)
	require.NotEqual(t, files["spores/lab-b.html"], after["spores/lab-b.html"])
	require.NotNil(t, after["spores/lab-b.html"])
	require.NotNil(t, after["index.html"])
	require.Nil(t, after["spores/lab-a.html"])
	later := f.export(now.Add(time.Hour), stamps)
	require.NotNil(t, later["spores/lab-a.html"])
}

// TestExportIntoViews: Put writes only what changed, and removes the page
// of a spore that is gone.
func TestExportIntoViews(t *testing.T) {
	f := newFixture(t)
	f.colony()
	dir := &views.Dir{Path: t.TempDir()}
	files := f.export(t0)
	written, err := WriteExport(dir, files)
	require.NoError(t, err)
	require.Len(t, written, len(files))
	written, err = WriteExport(dir, f.export(t0))
	require.NoError(t, err)
	require.Empty(t, written, "nothing changed, nothing written")
	// From its stamps: nothing rendered, nothing written, nothing removed.
	stamps := ReadExportStamps(dir.Path)
	require.Len(t, stamps, 13, "the index and five spore pages, the revision, the fleet and five records")
	require.Contains(t, stamps, revisionStamp)
	require.Contains(t, stamps, exportStamp)
	written, err = WriteExport(dir, f.export(t0, stamps))
	require.NoError(t, err)
	require.Empty(t, written)
	// A page removed by hand loses its stamp, so it is made again.
	require.NoError(t, os.Remove(filepath.Join(dir.Path, "spores", "lab-a.html")))
	written, err = WriteExport(dir, f.export(t0, ReadExportStamps(dir.Path)))
	require.NoError(t, err)
	require.Equal(t, []string{"spores/lab-a.html"}, written)

	require.NoError(t, f.st.Store.Update(context.Background(), func(tx state.Tx) error { return tx.DeleteSpore(context.Background(), "lab-c") }))
	// A file of someone else's is left alone.
	require.NoError(t, os.WriteFile(filepath.Join(dir.Path, "spores", "notes.txt"), []byte("mine"), 0o600))
	written, err = WriteExport(dir, f.export(t0))
	require.NoError(t, err)
	require.Contains(t, written, "spores/lab-c.html")
	require.NoFileExists(t, filepath.Join(dir.Path, "spores", "lab-c.html"))
	require.FileExists(t, filepath.Join(dir.Path, "spores", "notes.txt"))

	_, err = dir.Put(map[string][]byte{"../escape.html": nil}, nil)
	require.ErrorContains(t, err, "not a path inside")
	_, err = dir.Put(map[string][]byte{"fleet.json": nil}, nil)
	require.ErrorContains(t, err, "views' own files")
}

// failingDir fails the Put of any set of files holding fail.
type failingDir struct {
	puts [][]string
	fail string
}

func (d *failingDir) Put(files map[string][]byte, _ map[string]string) ([]string, error) {
	var names []string
	for k := range files {
		names = append(names, k)
	}
	slices.Sort(names)
	d.puts = append(d.puts, names)
	if _, ok := files[d.fail]; ok {
		return nil, errors.New("disk full")
	}
	return names, nil
}

// TestWriteExportStampsLast: the stamps are written after the pages, and
// not at all when a page could not be: the failed page keeps its old
// stamp, so the next export renders it again.
func TestWriteExportStampsLast(t *testing.T) {
	files := map[string][]byte{ExportIndex: []byte("i"), "spores/a.html": []byte("a"), ExportStamps: []byte("{}")}
	d := &failingDir{}
	_, err := WriteExport(d, files)
	require.NoError(t, err)
	require.Equal(t, [][]string{{ExportIndex, "spores/a.html"}, {ExportStamps}}, d.puts)

	d = &failingDir{fail: "spores/a.html"}
	_, err = WriteExport(d, files)
	require.ErrorContains(t, err, "disk full")
	require.Equal(t, [][]string{{ExportIndex, "spores/a.html"}}, d.puts, "no stamps after a failed page")
}
