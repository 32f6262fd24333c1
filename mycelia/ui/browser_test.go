package ui

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// browserTimeout bounds one browser test, browser start included.
const browserTimeout = 60 * time.Second

// The XSS payloads of the browser test. Each must reach the DOM as text.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `<img src=x onerror=alert(1)>`
)

// chromiumBin is the headless Chromium the browser tests drive, from
// $SPORECTL_CHROMIUM (.ci/chromium.sh installs Debian's chromium package).
// Without it the test is skipped — except with $CI set, where it fails.
func chromiumBin(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("SPORECTL_CHROMIUM")
	if bin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("CI is set but SPORECTL_CHROMIUM is not: export SPORECTL_CHROMIUM=$(bash .ci/chromium.sh)")
		}
		tb.Skip("SPORECTL_CHROMIUM is not set (export SPORECTL_CHROMIUM=$(bash .ci/chromium.sh))")
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("SPORECTL_CHROMIUM: %v", err)
	}
	return bin
}

// artifactsDir is where the browser tests save screenshots:
// $SPORECTL_ARTIFACTS/ui when set (kept after the run), else a temporary
// directory of the test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SPORECTL_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "ui")
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// browser is one headless Chromium tab, with the JavaScript dialogs and
// console messages it saw.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string

	mu      sync.Mutex
	dialogs []string
	console []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromiumBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root, and CI runs the
		// tests as root (.ci/run). Only then is the sandbox turned off; the
		// browser reads nothing but the test's own loopback server.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	// The browser ends before the test's server closes (t.Cleanup runs
	// last-in first-out, and the fixture registered its server first).
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancel() })
	b := &browser{t: t, ctx: tabCtx, dir: artifactsDir(t)}

	// Subscribing starts the browser and opens the tab. Every dialog is
	// recorded, then dismissed so that the page does not stay blocked.
	dialogs := chromedp.Events(tabCtx, page.JavascriptDialogOpening)
	console := chromedp.Console(tabCtx)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(tabCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	require.NoError(t, chromedp.Do(tabCtx), "start %s", bin)
	return b
}

// login logs the browser in as the fixture's operator through the login
// form, as a person would: every page needs a session. It lands on the
// log-out page, which runs no live stream, so the test's first page is
// the first the browser follows live.
func (b *browser) login(f *fixture) {
	b.t.Helper()
	b.do(chromedp.Navigate(f.ts.URL+"/ui/login?next=%2Fui%2Flogout"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do(chromedp.SendKeys(chromedp.ID("token"), fixtureToken), chromedp.Click(chromedp.CSS(`form.login button`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS("main .as")))
	require.Equal(b.t, f.ts.URL+"/ui/logout", run(b, chromedp.Location()))
	require.Equal(b.t, fixtureOperator, run(b, chromedp.Text(chromedp.CSS("header form.logout .as"))))
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	require.NoError(b.t, err)
	return v
}

func (b *browser) seenDialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// requireQuiet fails on any dialog, uncaught exception or
// Content-Security-Policy violation so far (a violation would mean the
// page tried to run or load something it should not).
func (b *browser) requireQuiet() {
	b.t.Helper()
	require.Empty(b.t, b.seenDialogs(), "a JavaScript dialog opened: a payload ran")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		require.False(b.t, m.IsException(), "uncaught exception in the page: %s", m)
		require.NotContains(b.t, m.Text, "Content Security Policy", "CSP violation: %s", m)
	}
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := run(b, chromedp.FullScreenshot(100))
	p := filepath.Join(b.dir, b.t.Name()+"-"+name+".png")
	require.NoError(b.t, os.WriteFile(p, png, 0o644))
	b.t.Logf("screenshot: %s", p)
}

// open clicks the link sel and waits for the page it loads.
func (b *browser) open(sel string) {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	require.NoError(b.t, err, "click %s", sel)
	require.EqualValues(b.t, http.StatusOK, resp.Status, "click %s", sel)
}

// domLine is one line of a spore page's conversation, as the DOM has it.
type domLine struct {
	Seq  string `json:"seq"`
	Cls  string `json:"cls"`
	From string `json:"from"`
	Text string `json:"text"`
	// Kids is how many elements the text's span holds (always 0: text only).
	Kids int `json:"kids"`
}

const linesJS = `Array.from(document.querySelectorAll("#conv li[data-seq]")).map(function (li) {
  var f = li.querySelector(".from"), t = li.querySelector(".text");
  return {seq: li.getAttribute("data-seq"), cls: li.className, from: f ? f.textContent : "", text: t ? t.textContent : "", kids: t ? t.children.length : -1};
})`

func (b *browser) lines() []domLine {
	b.t.Helper()
	return run(b, chromedp.Evaluate[[]domLine](linesJS))
}

func requireLine(t *testing.T, lines []domLine, from, text string) domLine {
	t.Helper()
	for _, l := range lines {
		if l.From == from && l.Text == text {
			require.Zero(t, l.Kids, "line %s holds elements", l.Seq)
			return l
		}
	}
	require.Failf(t, "line not on the page", "from %q text %q; the page has %+v", from, text, lines)
	return domLine{}
}

// TestPageInABrowser drives the page in a real headless Chromium: the
// fleet, a click to a spore's conversation, XSS payloads that stay text
// and run nothing, and the live tail bringing a new event without reload.
func TestPageInABrowser(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.add(state.Spore{Wish: state.Wish{ID: "lab-x", Colony: "lab", Rank: state.RankSpore}}, false,
		lifecycle(0, "created", ""),
		prompt(1, "user:mallory", xssScript),
		text(2, xssScript),
		text(3, xssImg))
	b := newBrowser(t)
	b.login(f)

	// The fleet shows every spore, grouped by colony, with a link each.
	b.do(chromedp.Navigate(f.ts.URL+"/ui/"), chromedp.WaitVisible(chromedp.ID("strip")))
	strip := run(b, chromedp.Text(chromedp.ID("strip")))
	require.Contains(t, strip, "1 working · 1 idle · 1 blocked · 1 dead · 2 asleep")
	ids := run(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("td.id a")).map(function (a) { return a.textContent; })`))
	require.Equal(t, []string{"far-x", "arch", "lab-a", "lab-b", "lab-c", "lab-x"}, ids)
	doing := run(b, chromedp.Text(chromedp.CSS(`section.colony`)))
	require.Contains(t, doing, "Bash: go test ./...")
	b.requireQuiet()
	b.screenshot("fleet")

	// One click opens a spore's page with its conversation.
	b.open(`a[href="/ui/spores/lab-a"]`)
	require.Equal(t, f.ts.URL+"/ui/spores/lab-a", run(b, chromedp.Location()))
	require.Equal(t, "lab-a", run(b, chromedp.Text(chromedp.CSS("h1"))))
	lines := b.lines()
	requireLine(t, lines, "[user:alice]", "Fix the flaky test.\nIt is in pass_test.go.")
	requireLine(t, lines, "", "Looking at it.\nFirst the test.")
	requireLine(t, lines, "", "Edit reconcile/pass_test.go")
	b.requireQuiet()
	b.screenshot("spore")

	// Hostile text is text: each payload is the textContent of its line,
	// no element came of it, and no dialog opened.
	// Back to the fleet by a new load: the fleet page is no longer
	// no-store, so Back may restore it from the back/forward cache, after
	// which chromedp's view of the DOM is stale and its selectors wait.
	b.do(chromedp.Navigate(f.ts.URL+"/ui/"), chromedp.WaitVisible(chromedp.ID("strip")))
	b.open(`a[href="/ui/spores/lab-x"]`)
	lines = b.lines()
	requireLine(t, lines, "[user:mallory]", xssScript)
	requireLine(t, lines, "", xssScript)
	requireLine(t, lines, "", xssImg)
	require.Zero(t, run(b, chromedp.Evaluate[int](`document.querySelectorAll("img").length`)), "an <img> came from a payload")
	require.Equal(t, []string{"TESTNONCE", "TESTNONCE"}, run(b, chromedp.Evaluate[[]string](`Array.from(document.scripts, s => s.nonce)`)),
		"only the page's own scripts (the live tail's and the prompt box's), each with the nonce")
	b.requireQuiet()
	b.screenshot("spore-xss")

	// The live tail: once the stream is open, events written to the store
	// appear on the open page without a reload — a payload among them,
	// which the script must also add as text.
	b.do(chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(15*time.Second)))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	before := len(lines)
	f.append("lab-x", text(10, "a new line, live"), text(11, xssImg+xssScript))
	b.do(chromedp.Poll[chromedp.Void](`document.querySelectorAll("#conv li[data-seq]").length >= `+strconv.Itoa(before+2),
		chromedp.WithPollingTimeout(15*time.Second)))
	require.True(t, run(b, chromedp.Evaluate[bool](`window.__sameDocument === true`)), "the page reloaded")
	lines = b.lines()
	require.Len(t, lines, before+2)
	requireLine(t, lines, "", "a new line, live")
	live := requireLine(t, lines, "", xssImg+xssScript)
	require.Equal(t, strconv.Itoa(before+2), live.Seq)
	require.Zero(t, run(b, chromedp.Evaluate[int](`document.querySelectorAll("img").length`)), "an <img> came from a live payload")
	require.Equal(t, 2, run(b, chromedp.Evaluate[int](`document.scripts.length`)), "no script came from a live payload")
	b.requireQuiet()
	b.screenshot("spore-live")

	// The dialog check is not vacuous: a dialog that does open is seen.
	b.do(chromedp.Evaluate[chromedp.Void](`alert("probe")`))
	require.Eventually(t, func() bool { return len(b.seenDialogs()) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"alert: probe"}, b.seenDialogs())

	b.mu.Lock()
	for _, m := range b.console {
		t.Logf("console: %s", strings.TrimSpace(m.String()))
	}
	b.mu.Unlock()
}
