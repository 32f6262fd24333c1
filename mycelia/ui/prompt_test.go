package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
)

// written is what a spore's log and outbox hold, to tell that a refused
// prompt wrote nothing.
type written struct {
	head   uint64
	outbox []state.OutboxEntry
	sp     state.Spore
}

func (f *fixture) written(id string) written {
	f.t.Helper()
	ctx := context.Background()
	var w written
	require.NoError(f.t, f.st.Store.View(ctx, func(tx state.Tx) error {
		h, err := tx.Head(ctx, id)
		if err != nil {
			return err
		}
		w.head = h.LastSeq
		if w.sp, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		w.outbox, err = tx.Outbox(ctx, id)
		return err
	}))
	return w
}

func (f *fixture) prompts(id string, after uint64) []state.Event {
	f.t.Helper()
	ctx := context.Background()
	var out []state.Event
	require.NoError(f.t, f.st.Store.View(ctx, func(tx state.Tx) error {
		evs, err := tx.Events(ctx, id, after, 1000)
		for _, ev := range evs {
			if ev.Kind == state.KindPrompt {
				out = append(out, ev)
			}
		}
		return err
	}))
	return out
}

// loggedIn is a browser logged in as alice, on lab-a's page, with its
// CSRF token.
func loggedIn(t *testing.T, f *fixture) (*user, string) {
	t.Helper()
	u := f.user()
	u.login(f.operator("alice"))
	page := u.get("/ui/spores/lab-a")
	require.Equal(t, http.StatusOK, page.status)
	return u, csrfOn(t, page.body)
}

// TestPromptBox: a prompt from the page goes the way of `sporectl prompt`:
// one event in the log, one outbox entry, delivered once to the bridge,
// from the logged-in operator; then 303 back to the spore's page.
func TestPromptBox(t *testing.T) {
	f := newFixture(t)
	f.colony()
	logs := f.captureLog()
	u, csrf := loggedIn(t, f)

	page := u.get("/ui/spores/lab-a")
	require.Contains(t, page.body, `<form class="prompt" id="prompt" method="post" action="/ui/spores/lab-a/prompt">`)
	require.Contains(t, page.body, `sent as <span class="as">user:alice</span>`)
	require.Contains(t, page.body, `<script nonce="TESTNONCE">`)
	require.Equal(t, csrf, csrfOn(t, page.body), "one CSRF token per session")

	// Without delivery the outbox holds it, exactly once.
	pass := f.h.Pass
	f.h.Pass = nil
	before := f.written("lab-a")
	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"Run the tests.\r\nThen report."}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	require.Equal(t, "/ui/spores/lab-a", a.header.Get("Location"))
	after := f.written("lab-a")
	require.Equal(t, before.head+1, after.head)
	require.Len(t, after.outbox, len(before.outbox)+1)
	entry := after.outbox[len(after.outbox)-1]
	require.Equal(t, "user:alice", entry.From)
	require.Equal(t, "Run the tests.\nThen report.", entry.Text)
	require.False(t, entry.Wake)
	evs := f.prompts("lab-a", before.head)
	require.Len(t, evs, 1)
	require.Equal(t, state.Event{Seq: before.head + 1, Kind: state.KindPrompt, From: "user:alice", At: t0.Add(time.Hour), Text: "Run the tests.\nThen report."},
		state.Event{Seq: evs[0].Seq, Kind: evs[0].Kind, Action: evs[0].Action, From: evs[0].From, At: evs[0].At, Text: evs[0].Text})

	// With the pass it is delivered to the bridge at once, once; the
	// earlier one with it (the outbox is delivered in order).
	f.h.Pass = pass
	a = u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"second"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	got := f.rt.BridgeOf("lab-a").Prompts()
	require.Len(t, got, 2)
	require.Equal(t, entry.ID, got[0].ID)
	require.Equal(t, "Run the tests.\nThen report.", got[0].Text)
	require.Equal(t, "second", got[1].Text)
	require.Empty(t, f.written("lab-a").outbox)
	require.Len(t, f.prompts("lab-a", before.head), 2)
	require.Contains(t, logs.String(), "ui: prompt sent")
	require.NotContains(t, logs.String(), "Run the tests", "no prompt text in the log")
	require.NotContains(t, logs.String(), csrf)

	// The page shows the prompt with its sender.
	page = u.get("/ui/spores/lab-a")
	require.Contains(t, page.body, `<span class="from">[user:alice]</span> <span class="text">second</span>`)
}

func TestPromptRefused(t *testing.T) {
	f := newFixture(t)
	f.colony()
	u, csrf := loggedIn(t, f)
	other := f.user()
	other.login(f.operator("bob"))
	otherCSRF := csrfOn(t, other.get("/ui/spores/lab-a").body)
	require.NotEqual(t, csrf, otherCSRF)

	good := func() url.Values { return url.Values{"csrf": {csrf}, "text": {"hello"}} }
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  []string
		want int
	}{
		{"no csrf", url.Values{"text": {"hello"}}, nil, http.StatusForbidden},
		{"empty csrf", url.Values{"csrf": {""}, "text": {"hello"}}, nil, http.StatusForbidden},
		{"wrong csrf", url.Values{"csrf": {csrf + "x"}, "text": {"hello"}}, nil, http.StatusForbidden},
		{"another session's csrf", url.Values{"csrf": {otherCSRF}, "text": {"hello"}}, nil, http.StatusForbidden},
		{"cross-origin", good(), []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"opaque origin", good(), []string{"Origin", "null"}, http.StatusForbidden},
		{"cross-site referer", good(), []string{"Origin", "", "Referer", "http://evil.example/"}, http.StatusForbidden},
		{"no origin", good(), []string{"Origin", ""}, http.StatusForbidden},
		{"empty", url.Values{"csrf": {csrf}, "text": {" \n "}}, nil, http.StatusBadRequest},
		{"not utf-8", url.Values{"csrf": {csrf}, "text": {"\xff\xfe"}}, nil, http.StatusBadRequest},
		{"too long", url.Values{"csrf": {csrf}, "text": {strings.Repeat("a", bridge.MaxPromptBytes+1)}}, nil, http.StatusRequestEntityTooLarge},
		// Within the bound, but not as the bridge would be given it (each
		// "[from" rewritten): it would wait at the head of the outbox for
		// ever.
		{"too long once framed", url.Values{"csrf": {csrf}, "text": {strings.Repeat("[from ", 200000/6)}}, nil, http.StatusRequestEntityTooLarge},
		// The one check every text passes (bridge.CheckText): a textarea's
		// CRLF becomes LF, but a lone carriage return or an escape is refused.
		{"escape", url.Values{"csrf": {csrf}, "text": {"hi \x1b[2J"}}, nil, http.StatusBadRequest},
		{"lone carriage return", url.Values{"csrf": {csrf}, "text": {"a\rb"}}, nil, http.StatusBadRequest},
		{"body too big", url.Values{"csrf": {csrf}, "text": {strings.Repeat("\x01", bridge.MaxPromptBytes+10)}}, nil, http.StatusRequestEntityTooLarge},
	} {
		before := f.written("lab-a")
		a := u.post("/ui/spores/lab-a/prompt", tc.form, tc.hdr...)
		require.Equal(t, tc.want, a.status, "%s: %s", tc.name, a.body)
		requireSecure(t, a)
		require.Equal(t, before, f.written("lab-a"), "%s: nothing written", tc.name)
	}
	require.Empty(t, f.rt.BridgeOf("lab-a").Prompts())

	// At the cap exactly it goes.
	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {strings.Repeat("a", bridge.MaxPromptBytes)}})
	require.Equal(t, http.StatusSeeOther, a.status)

	// A spore that is not there, or not an id.
	require.Equal(t, http.StatusNotFound, u.post("/ui/spores/nobody/prompt", good()).status)
	require.Equal(t, http.StatusNotFound, u.post("/ui/spores/NOT-AN-ID/prompt", good()).status)
	// Only POST, only there.
	require.Equal(t, http.StatusNotFound, u.get("/ui/spores/lab-a/prompt").status)
	require.Equal(t, http.StatusMethodNotAllowed, u.do(http.MethodPut, "/ui/spores/lab-a/prompt", good()).status)
	require.Equal(t, http.StatusMethodNotAllowed, u.post("/ui/spores/lab-a", good()).status)

	// The page's script asks for errors as text.
	a = u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}}, "Accept", "text/plain")
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"))
	require.Equal(t, "the prompt is empty\n", a.body)
}

// TestPromptAsleep: a sleeping spore is refused without "wake it" (409,
// nothing written) and woken and prompted with it, as prompt --wake.
func TestPromptAsleep(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.h.WakeWait = 5 * time.Second
	u, csrf := loggedIn(t, f)
	page := u.get("/ui/spores/lab-b")
	require.Contains(t, page.body, "asleep (desired Paused)")

	before := f.written("lab-b")
	a := u.post("/ui/spores/lab-b/prompt", url.Values{"csrf": {csrf}, "text": {"wake up"}})
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Contains(t, a.body, "lab-b is asleep (desired Paused): nothing was sent")
	require.Contains(t, a.body, "wake it if asleep")
	require.Equal(t, before, f.written("lab-b"))

	a = u.post("/ui/spores/lab-b/prompt", url.Values{"csrf": {csrf}, "text": {"wake up"}, "wake": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	after := f.written("lab-b")
	require.Equal(t, state.Running, after.sp.Desired)
	require.Equal(t, before.sp.Generation+1, after.sp.Generation)
	evs := f.prompts("lab-b", before.head)
	require.Len(t, evs, 1)
	require.Equal(t, "wake up", evs[0].Text)
	got := f.rt.BridgeOf("lab-b").Prompts()
	require.Len(t, got, 1, "started and delivered")
	require.Equal(t, "wake up", got[0].Text)
}

// TestPromptXSS: a hostile prompt is shown as text.
func TestPromptXSS(t *testing.T) {
	f := newFixture(t)
	f.colony()
	u, csrf := loggedIn(t, f)
	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {xss + `<img src=x onerror=alert(1)>`}})
	require.Equal(t, http.StatusSeeOther, a.status)
	page := u.get("/ui/spores/lab-a")
	require.NotContains(t, page.body, xss)
	require.NotContains(t, page.body, "<img")
	require.Contains(t, page.body, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;")
}
