package ui

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
)

// idsOn lists the spores with a row on a page, in the page's order.
func idsOn(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<td class="id"><a href="/ui/spores/([^"]+)">`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// stripOf is a page's strip of counts.
func stripOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<p class="strip" id="strip">.*</p>`).FindString(body)
	require.NotEmpty(t, m, "no strip")
	return m
}

func TestFleetPaging(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	f.h.FleetRows = 3
	// The rows needing attention first (far-x blocked, lab-c dead), then
	// the others, each by colony and id; a page shows its rows by colony.
	pages := map[string][]string{
		"":       {"chatty", "far-x", "lab-c"},
		"page=2": {"arch", "busy", "lab-a"},
		"page=3": {"lab-b"},
		"page=9": {"lab-b"}, // past the last: the last
	}
	var strip string
	for q, want := range pages {
		a := f.get("/ui/?" + q)
		require.Equal(t, http.StatusOK, a.status, q)
		require.Equal(t, want, idsOn(a.body), q)
		// The strip counts the whole fleet on every page.
		if strip == "" {
			strip = stripOf(t, a.body)
		}
		require.Equal(t, strip, stripOf(t, a.body), q)
		require.Contains(t, strip, `<span class="b-asleep">3 asleep</span>`)
	}
	first := f.get("/ui/").body
	require.Contains(t, first, `spores 1–3 of 7, those needing attention first · page 1 of 3:`)
	require.Contains(t, first, `first · previous · <a href="/ui/?page=2" rel="next">next</a> · <a href="/ui/?page=3" rel="last">last</a>`)
	require.Contains(t, first, `data-events="/ui/fleet/events"`)
	second := f.get("/ui/?page=2").body
	require.Contains(t, second, `spores 4–6 of 7`)
	require.Contains(t, second, `<a href="/ui/" rel="first">first</a> · <a href="/ui/" rel="prev">previous</a> · <a href="/ui/?page=3" rel="next">next</a>`)
	require.Contains(t, second, `data-events="/ui/fleet/events?page=2"`, "the live stream follows the page")
	last := f.get("/ui/?page=9").body
	require.Contains(t, last, `spores 7–7 of 7`)
	require.Contains(t, last, `· next · last</nav>`)

	// Filters page the rows they let through, and the pager keeps them;
	// a filter's links start again at page 1.
	a := f.get("/ui/?colony=lab&page=2")
	require.Equal(t, []string{"lab-a", "lab-b"}, idsOn(a.body), "lab-c, arch, busy on page 1")
	require.Contains(t, a.body, `<a href="/ui/?colony=lab" rel="prev">previous</a>`)
	require.Contains(t, a.body, `<a href="/ui/?colony=lab&amp;state=dead">dead</a> 1`)
	require.Contains(t, a.body, `<span class="b-dead">1 dead</span>`)
	require.Equal(t, []string{"chatty", "busy", "lab-b"}, idsOn(f.get("/ui/?state=asleep").body), "one page: no pager")
	require.NotContains(t, f.get("/ui/?state=asleep").body, `class="pager"`)

	// The stream of page 2 sends page 2's rows.
	f.h.fleetLive.every = time.Hour
	ctx := t.Context()
	frag := nextFleet(t, f.sse(t, ctx, "/ui/fleet/events?page=2"), `id="strip"`)
	require.Equal(t, []string{"arch", "busy", "lab-a"}, idsOn(frag))

	// A page reads only its own rows' events: page 3 reads one tail.
	f.st.take()
	f.get("/ui/?page=3")
	var tails []string
	for _, r := range f.st.take() {
		if strings.HasPrefix(r, "tail ") {
			tails = append(tails, r)
		}
	}
	require.Equal(t, []string{fmt.Sprintf("tail lab-b n=%d", TailEvents)}, tails, "one row, one tail")
}

func TestFleetGzip(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	plain := f.get("/ui/", "Accept-Encoding", "identity")
	require.Equal(t, http.StatusOK, plain.status)
	require.Empty(t, plain.header.Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding", plain.header.Get("Vary"))
	for _, ae := range []string{"gzip", "deflate, gzip;q=0.5", "br, GZIP"} {
		z := f.get("/ui/", "Accept-Encoding", ae)
		require.Equal(t, http.StatusOK, z.status, ae)
		require.Equal(t, "gzip", z.header.Get("Content-Encoding"), ae)
		require.Equal(t, "Accept-Encoding", z.header.Get("Vary"), ae)
		requireSecure(t, z)
		zr, err := gzip.NewReader(bytes.NewReader([]byte(z.body)))
		require.NoError(t, err, ae)
		b, err := io.ReadAll(zr)
		require.NoError(t, err, ae)
		require.Equal(t, plain.body, string(b), ae)
		require.Less(t, len(z.body), len(plain.body)/2, ae)
	}
	for _, ae := range []string{"gzip;q=0", "deflate", "br"} {
		require.Empty(t, f.get("/ui/", "Accept-Encoding", ae).header.Get("Content-Encoding"), ae)
	}
	// Other pages too; a short answer is not worth it.
	require.Equal(t, "gzip", f.get("/ui/spores/lab-a", "Accept-Encoding", "gzip").header.Get("Content-Encoding"))
	require.Empty(t, f.get("/ui/nowhere", "Accept-Encoding", "gzip", "Accept", "text/plain").header.Get("Content-Encoding"))
}

func TestFleetETag(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	var n atomic.Int64
	f.h.Nonce = func() string { return fmt.Sprintf("NONCE%d", n.Add(1)) }
	a := f.get("/ui/")
	require.Equal(t, http.StatusOK, a.status)
	tag := a.header.Get("ETag")
	require.Regexp(t, `^W/"[A-Za-z0-9_-]+"$`, tag)
	require.Equal(t, "private, no-cache", a.header.Get("Cache-Control"))
	require.Equal(t, "no-store", f.get("/ui/spores/lab-a").header.Get("Cache-Control"), "other pages are never kept")
	require.Equal(t, "no-store", f.get("/ui/?page=0").header.Get("Cache-Control"), "nor a refusal")

	// The same page with another nonce: the same tag, and 304 for it.
	b := f.get("/ui/", "If-None-Match", tag)
	require.Equal(t, http.StatusNotModified, b.status)
	require.Empty(t, b.body)
	require.Equal(t, tag, b.header.Get("ETag"))
	require.Empty(t, b.header.Get("Content-Security-Policy"), "the kept copy keeps the CSP of its own nonce")
	require.Equal(t, "DENY", b.header.Get("X-Frame-Options"))
	require.Equal(t, http.StatusNotModified, f.get("/ui/", "If-None-Match", `"x", `+tag[2:]).status, "a list, strong form")
	require.Equal(t, http.StatusNotModified, f.get("/ui/", "If-None-Match", tag, "Accept-Encoding", "identity").status)
	require.Equal(t, http.StatusOK, f.get("/ui/", "If-None-Match", `W/"other"`).status)
	require.Equal(t, http.StatusOK, f.get("/ui/?colony=lab", "If-None-Match", tag).status, "another filter, another page")

	// With the real nonces (random, 128 bits) too.
	f.h.Nonce = nil
	for range 8 {
		require.Equal(t, http.StatusNotModified, f.get("/ui/", "If-None-Match", tag).status)
	}

	// Another operator's page of the same fleet is another page (its
	// name and form token are in it): never its 304.
	u := f.user()
	u.login(f.operator("alice"))
	c := u.get("/ui/")
	require.Equal(t, http.StatusOK, c.status)
	require.NotEqual(t, tag, c.header.Get("ETag"))
	require.Contains(t, c.body, `<span class="as">alice</span>`)
	require.NotContains(t, c.body, `<span class="as">`+fixtureOperator+`</span>`)
	require.Equal(t, http.StatusOK, u.get("/ui/", "If-None-Match", tag).status)

	// The fleet changes: a new tag, and the old one gets the page.
	f.rt.Kill("arch", "OOMKilled")
	d := f.get("/ui/", "If-None-Match", tag)
	require.Equal(t, http.StatusOK, d.status)
	require.NotEqual(t, tag, d.header.Get("ETag"))
	require.Contains(t, rowHTML(t, d.body, "arch"), `<td class="eff">Dead</td>`)
}

// TestFleetSharesOnePass: page loads that come while a fleet read runs
// share its pass; within FleetShare, later ones too; none when it is
// negative.
func TestFleetSharesOnePass(t *testing.T) {
	f := newFixture(t)
	f.colony()
	var passes atomic.Int64
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	f.h.Pass.Finished = func(reconcile.Options, *reconcile.Outcome, time.Duration, error) {
		passes.Add(1)
		entered <- struct{}{}
		<-release
	}
	var wg sync.WaitGroup
	answers := make([]answer, 3)
	get := func(i int) {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = f.get("/ui/") }()
	}
	get(0)
	<-entered // the first load's pass is running
	get(1)
	get(2)
	require.Eventually(t, func() bool { return f.h.fleetLive.read.Waiting() == 3 }, 10*time.Second, time.Millisecond,
		"the later loads wait for the running read")
	close(release)
	wg.Wait()
	require.Equal(t, int64(1), passes.Load(), "three loads, one pass")
	for i, a := range answers {
		require.Equal(t, http.StatusOK, a.status, i)
		require.Equal(t, answers[0].body, a.body, i)
	}

	f.get("/ui/")
	require.Equal(t, int64(2), passes.Load(), "FleetShare < 0: a later load reads again")
	f.h.FleetShare = time.Hour
	f.get("/ui/")
	f.get("/ui/?colony=lab")
	require.Equal(t, int64(2), passes.Load(), "within FleetShare: the last read")
	f.h.FleetShare = 0
	require.Equal(t, DefaultFleetShare, f.h.fleetShare())
}
