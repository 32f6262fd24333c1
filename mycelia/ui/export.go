package ui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/sporectl/sporectl/internal/digest"
	"github.com/sporectl/sporectl/internal/lazy"
	"github.com/sporectl/sporectl/internal/parallel"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The files of a static export, relative to its directory.
const (
	ExportIndex  = "index.html"
	ExportSpores = "spores" // one <id>.html per spore
	ExportStatic = "static" // the stylesheets
)

// ExportLimit is how many of a spore's last events its exported page
// holds; the whole conversation is its transcript (transcripts/<id>.md
// beside the export).
const ExportLimit = MaxLimit

// exportCSP is what an exported page allows, as a meta element (a file
// has no headers): its stylesheets and nothing else, no script at all.
const exportCSP = "default-src 'none'; style-src 'self' file:; img-src 'none'; script-src 'none'; " +
	"base-uri 'none'; form-action 'none'"

// ExportStamps is the file, beside the spore pages, in which an export
// keeps what each page was made from (see Export).
const ExportStamps = ExportSpores + "/stamps.json"

// The stamps that name no file (no file's path begins with a dot): the
// store's revision the records were read at, and each record's digest
// (recordStamp + its id).
const (
	revisionStamp = ".revision"
	recordStamp   = ".record/"
)

// knowsRecords says whether prev has a digest of every spore's record.
func knowsRecords(prev map[string]string, res reconcile.Result) bool {
	for _, s := range res.Spores {
		if prev[recordStamp+s.ID] == "" {
			return false
		}
	}
	return true
}

// readRecords is every spore's record, by id.
func readRecords(ctx context.Context, tx state.Tx) (map[string]*state.Spore, error) {
	sps, err := tx.Spores(ctx)
	if err != nil {
		return nil, err
	}
	recs := make(map[string]*state.Spore, len(sps))
	for i := range sps {
		recs[sps[i].ID] = &sps[i]
	}
	return recs, nil
}

// Export renders the static copy of the page (docs/page.md "Static
// export") for the spores of res: the fleet as index.html, each spore's
// newest ExportLimit events as spores/<id>.html, and the stylesheets, from
// the same templates and data as the served pages. Every script, form and
// live stream is left out, links between pages lead from file to file,
// and relative times are written out as the times they stand for, so an
// export of an unchanged store is the same bytes whenever it is made
// (within the hour that activity figures are counted by: now is
// truncated to it).
//
// The result maps each file's path (slash-separated, relative to the
// export's directory) to its content; nil content means "unchanged, keep
// the file": a page whose stamp in prev (what the previous export wrote
// to ExportStamps, with entries only for files still there) equals what
// it would be made from now is not rendered again, so an export of an
// unchanged fleet renders nothing, and one of a store at the revision
// prev was made at reads no record either.
// Spores whose id is not one (a hand-edited store) appear in the index as
// text and get no page.
func Export(ctx context.Context, st state.Store, res reconcile.Result, now time.Time, prev map[string]string) (map[string][]byte, error) {
	hour := now.UTC().Truncate(time.Hour)
	h := &Handler{Store: st, Now: func() time.Time { return hour }}
	// A page and a record's digest a spore: the maps are made their size,
	// not grown to it a dozen times over.
	files := make(map[string][]byte, len(res.Spores)+8)
	// The records are read, and each digested, only when the store has
	// changed since the export that wrote prev: a store at rest costs its
	// revision, not a read and an encoding of every record.
	var rev string
	var recs map[string]*state.Spore
	read := func(tx state.Tx) (err error) {
		recs, err = readRecords(ctx, tx)
		return err
	}
	err := st.View(ctx, func(tx state.Tx) error {
		var err error
		if rev, err = tx.Revision(ctx); err != nil {
			return err
		}
		if rev != "" && rev == prev[revisionStamp] && knowsRecords(prev, res) {
			return nil
		}
		return read(tx)
	})
	if err != nil {
		return nil, fmt.Errorf("export: read the spores: %w", err)
	}
	var fleet string
	if rev != "" {
		fleet = fleetStamp(res, hour, rev)
		if recs == nil && atRest(prev, res, fleet) {
			kept := keptExport(res)
			if err := addStylesheets(kept); err != nil {
				return nil, err
			}
			return kept, nil
		}
	}
	stamps := make(map[string]string, 2*len(res.Spores)+3)
	if rev != "" {
		stamps[revisionStamp] = rev
		stamps[exportStamp] = fleet
	}

	// A spore's page shows its record and its last events (its LastSeq
	// says which), as of hour. The stamps are hashes of what they stand
	// for, made on every core: in a fleet at rest they are most of what
	// an export costs. A record's digest is the one prev has when the
	// store is at the revision prev was made at ("" for a spore deleted
	// since the pass, which gets no page).
	recDigests := make([]string, len(res.Spores))
	pageStamps := make([]string, len(res.Spores))
	// The index shows the pass's result and each spore's record and last
	// events, as of hour: each spore's line of it is stamped here too,
	// from the spore's health and its page's stamp (or, for a spore
	// without a page, an id that is not one, its record), so that the
	// index's stamp is a digest of 10,000 short stamps, not an encoding
	// of the whole result on one core.
	lineStamps := make([]string, len(res.Spores))
	parallel.For(len(res.Spores), 256, func(i int) {
		s := res.Spores[i]
		d := prev[recordStamp+s.ID]
		if recs != nil {
			d = ""
			if rec := recs[s.ID]; rec != nil {
				d = recordDigest(rec)
			}
		}
		recDigests[i] = d
		if state.ValidateID(s.ID) == nil && d != "" {
			pageStamps[i] = pageStamp(d, hour, s.LastSeq)
			lineStamps[i] = lineStamp(&s, pageStamps[i])
		} else {
			lineStamps[i] = lineStamp(&s, d)
		}
	})
	for i, s := range res.Spores {
		if recDigests[i] != "" {
			stamps[recordStamp+s.ID] = recDigests[i]
		}
	}
	stamps[ExportIndex] = indexStamp(res.Orphans, hour, lineStamps)
	if prev[ExportIndex] == stamps[ExportIndex] {
		files[ExportIndex] = nil
	} else {
		if recs == nil {
			if err := st.View(ctx, read); err != nil {
				return nil, fmt.Errorf("export: read the spores: %w", err)
			}
		}
		// The whole fleet on one page: a file has no ?page=.
		page, err := h.fleetPageOf(ctx, fleetOf(res, recs, hour), fleetFilter{}, "", 0)
		if err != nil {
			return nil, fmt.Errorf("export the fleet: %w", err)
		}
		page.EventsURL = "" // no live stream in a file
		b, err := h.exportPage("fleet.html", page, 0, hour)
		if err != nil {
			return nil, err
		}
		files[ExportIndex] = b
	}

	for i, s := range res.Spores {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if pageStamps[i] == "" {
			continue // not a file name, or deleted since the pass
		}
		rel := ExportSpores + "/" + s.ID + ".html"
		stamps[rel] = pageStamps[i]
		if prev[rel] == stamps[rel] {
			files[rel] = nil
			continue
		}
		var sp sporePage
		var err error
		if s.Code != reconcile.ReasonStoreDamage {
			sp, err = h.sporeData(ctx, s.ID, pageParams{limit: ExportLimit})
		}
		if errors.Is(err, state.ErrNotFound) {
			delete(stamps, rel)
			continue // deleted since the pass
		}
		if _, damaged := state.SporeDamage(err); damaged || s.Code == reconcile.ReasonStoreDamage {
			// Its stored data does not read: the page it had stays as
			// it was (a view, never the truth) until a repair, and the
			// other spores' pages are written; the pass and check name
			// the damage.
			files[rel] = nil
			if prev[rel] == "" {
				delete(stamps, rel)
			} else {
				stamps[rel] = prev[rel]
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("export spore %s: %w", s.ID, err)
		}
		sp.Live, sp.EventsURL, sp.Newer, sp.Newest = false, "", "", ""
		if sp.Older != "" {
			sp.Older = "../transcripts/" + s.ID + ".md"
		}
		b, err := h.exportPage("spore.html", sp, 1, hour)
		if err != nil {
			return nil, err
		}
		files[rel] = b
	}
	if maps.Equal(stamps, prev) {
		// Every page is still there and made from what it was: the file
		// says so already (an entry it has for a page gone is one that
		// ReadExportStamps drops).
		files[ExportStamps] = nil
	} else {
		b, err := json.MarshalIndent(stamps, "", " ")
		if err != nil {
			return nil, err
		}
		files[ExportStamps] = append(b, '\n')
	}

	if err := addStylesheets(files); err != nil {
		return nil, err
	}
	return files, nil
}

// addStylesheets adds the export's stylesheets to files.
func addStylesheets(files map[string][]byte) error {
	css, err := fs.Sub(staticFS, "static")
	if err != nil {
		return err
	}
	ents, err := fs.ReadDir(css, ".")
	if err != nil {
		return fmt.Errorf("export the stylesheets: %w", err)
	}
	for _, e := range ents {
		b, err := fs.ReadFile(css, e.Name())
		if err != nil {
			return fmt.Errorf("export the stylesheets: %w", err)
		}
		files[ExportStatic+"/"+e.Name()] = b
	}
	return nil
}

// ExportDir is where an export is written (reconcile/views.Dir): files
// written only when their bytes differ, nil contents kept, and the files
// of each prune directory with its suffix that are not in files removed.
type ExportDir interface {
	Put(files map[string][]byte, prune map[string]string) ([]string, error)
}

// WriteExport writes what Export made into d and returns what changed.
// The stamps go last, and only once every page is written: a page that
// failed keeps its old stamp, so the next export renders it again.
func WriteExport(d ExportDir, files map[string][]byte) ([]string, error) {
	stamps, ok := files[ExportStamps]
	pages := make(map[string][]byte, len(files))
	for k, v := range files {
		if k != ExportStamps {
			pages[k] = v
		}
	}
	written, err := d.Put(pages, map[string]string{ExportSpores: ".html", ExportStatic: ".css"})
	if err != nil || !ok {
		return written, err
	}
	w, err := d.Put(map[string][]byte{ExportStamps: stamps}, nil)
	return append(written, w...), err
}

// recordDigest is a short digest of a spore's record: of its JSON, the
// pages' format first, so that any field of it counts.
func recordDigest(rec *state.Spore) string {
	s := stampers.Get().(*stamper)
	defer stampers.Put(s)
	s.buf.Reset()
	s.hash.Reset()
	_ = s.enc.Encode(exportFormat())
	_ = s.enc.Encode(rec) // plain data: cannot fail
	s.hash.Write(s.buf.Bytes())
	var sum [sha256.Size]byte
	return hex.EncodeToString(s.hash.Sum(sum[:0])[:16])
}

// pageStamp is the stamp of a spore's page: its record (by digest), its
// last sequence number and the hour.
func pageStamp(record string, hour time.Time, lastSeq uint64) string {
	return stampWith(func(d *digest.Digest) {
		d.Str(record)
		d.Time(hour)
		d.Uint(lastSeq)
	})
}

// lineStamp is the stamp of a spore's line of the index: its health in
// the pass's result (SporeHealth.AddTo) and page, its page's stamp (for a
// spore with no page, its record's digest).
func lineStamp(s *reconcile.SporeHealth, page string) string {
	return stampWith(func(d *digest.Digest) {
		s.AddTo(d)
		d.Str(page)
	})
}

// indexStamp is the stamp of the index: the orphans, the hour and each
// spore's line.
func indexStamp(orphans []string, hour time.Time, lines []string) string {
	return stampWith(func(d *digest.Digest) {
		d.Uint(uint64(len(orphans)))
		for _, o := range orphans {
			d.Str(o)
		}
		d.Time(hour)
		d.Uint(uint64(len(lines)))
		for _, l := range lines {
			d.Str(l)
		}
	})
}

// stampWith is the digest of the pages' format and what add adds.
func stampWith(add func(d *digest.Digest)) string {
	d := digests.Get().(*digest.Digest)
	defer digests.Put(d)
	d.Reset()
	d.Str(exportFormat())
	add(d)
	return d.Sum()
}

var digests = sync.Pool{New: func() any { return digest.New() }}

// stamper is what recordDigest reuses: an export of a store that
// changed digests every record, and a hash and an encoder each time were
// a third of it.
type stamper struct {
	hash hash.Hash
	buf  bytes.Buffer
	enc  *json.Encoder
}

var stampers = sync.Pool{New: func() any {
	s := &stamper{hash: sha256.New()}
	s.enc = json.NewEncoder(&s.buf)
	return s
}}

// exportFormat names the pages' rendering; bump it with any change to
// the templates or how pages are made, so older exports are redone. It
// hashes the templates on first use, as the page parses them.
var exportFormat = lazy.New("ui.exportFormat", func() string {
	hash := sha256.New()
	_ = fs.WalkDir(templateFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(templateFS, p)
			hash.Write(b)
		}
		return nil
	})
	return "1:" + hex.EncodeToString(hash.Sum(nil)[:8])
})

// exportPage renders one template and makes it a file: see staticize.
// depth is how many directories below the export's root the file is.
func (h *Handler) exportPage(name string, data any, depth int, hour time.Time) ([]byte, error) {
	var b strings.Builder
	if err := pages().ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("export %s: %w", name, err)
	}
	doc, err := html.Parse(strings.NewReader(strings.Replace(b.String(), accountMark, "", 1)))
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", name, err)
	}
	staticize(doc, strings.Repeat("../", depth))
	note(doc, "A static copy written by sporectl reconcile; activity as of "+hour.Format("2006-01-02 15:04 UTC")+". Run sporectl serve for the live page.")
	var out bytes.Buffer
	if err := html.Render(&out, doc); err != nil {
		return nil, fmt.Errorf("export %s: %w", name, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// staticize turns a served page into a file: it removes scripts, forms,
// and what only a server can do (elements marked data-serve-only: filters), adds the
// export's Content-Security-Policy, writes each <time> out as the time it
// stands for, and rewrites the page's links (up leads to the export's
// root): to the fleet, a spore's page, a stylesheet or a transcript. A
// link to anything else of the server's (a filter, another page of
// events) becomes its text.
func staticize(n *html.Node, up string) {
	var drop []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.DataAtom == atom.Script, n.DataAtom == atom.Form, hasAttr(n, "data-serve-only"):
				drop = append(drop, n)
				return
			case n.DataAtom == atom.Head:
				n.AppendChild(&html.Node{Type: html.ElementNode, Data: "meta", DataAtom: atom.Meta, Attr: []html.Attribute{
					{Key: "http-equiv", Val: "Content-Security-Policy"}, {Key: "content", Val: exportCSP}}})
			case n.DataAtom == atom.Time:
				if t, err := time.Parse(time.RFC3339, attr(n, "datetime")); err == nil {
					for c := n.FirstChild; c != nil; c = n.FirstChild {
						n.RemoveChild(c)
					}
					n.AppendChild(&html.Node{Type: html.TextNode, Data: t.UTC().Format("2006-01-02 15:04 UTC")})
				}
			}
			for i, a := range n.Attr {
				if a.Key != "href" && a.Key != "src" {
					continue
				}
				if to, ok := exportLink(a.Val, up); ok {
					n.Attr[i].Val = to
				} else if n.DataAtom == atom.A {
					n.Attr = append(n.Attr[:i], n.Attr[i+1:]...)
					n.Data, n.DataAtom = "span", atom.Span
					break
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	for _, d := range drop {
		d.Parent.RemoveChild(d)
	}
}

// note puts text first in the page's <main>, as a paragraph.
func note(n *html.Node, text string) {
	if n.Type == html.ElementNode && n.DataAtom == atom.Main {
		p := &html.Node{Type: html.ElementNode, Data: "p", DataAtom: atom.P, Attr: []html.Attribute{{Key: "class", Val: "export"}}}
		p.AppendChild(&html.Node{Type: html.TextNode, Data: text})
		n.InsertBefore(p, n.FirstChild)
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		note(c, text)
	}
}

// exportLink maps one of the server's links to a file of the export.
func exportLink(href, up string) (string, bool) {
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	if u.Scheme != "" || u.Host != "" {
		return href, true // markdown's links lead out: kept as they are
	}
	switch p := u.Path; {
	case strings.HasPrefix(p, "../transcripts/") && u.RawQuery == "":
		return up + strings.TrimPrefix(p, "../"), true
	case u.RawQuery != "" || u.Fragment != "":
		return "", false
	case p == Prefix:
		return up + ExportIndex, true
	case strings.HasPrefix(p, Prefix+"static/"):
		name := strings.TrimPrefix(p, Prefix+"static/")
		if name == "" || strings.Contains(name, "/") {
			return "", false
		}
		return up + ExportStatic + "/" + name, true
	case strings.HasPrefix(p, Prefix+"spores/"):
		id := strings.TrimPrefix(p, Prefix+"spores/")
		if state.ValidateID(id) != nil {
			return "", false
		}
		return up + path.Join(ExportSpores, id+".html"), true
	}
	return "", false
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
