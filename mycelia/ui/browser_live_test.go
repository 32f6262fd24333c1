package ui

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// TestDeathAndRestartInABrowser: a spore's page is open in a real
// Chromium; the spore dies, a reconcile pass records it and restarts it,
// and the lines the pass wrote appear on the open page without a reload,
// pushed by the store's watch (the tails' safety poll is an hour), in the
// same markup a reload renders.
func TestDeathAndRestartInABrowser(t *testing.T) {
	f := liveFixture(t)
	ctx := context.Background()
	f.add(state.Spore{Wish: state.Wish{ID: "lab-r", Colony: "lab", Rank: state.RankSpore}}, true,
		lifecycle(0, "created", ""),
		prompt(1, "user:alice", "Keep the tests green."),
		text(2, "**On it.** Running `go test` now:\n\n- reconcile\n- mycelia/ui"))
	pass := reconciletest.NewPass(t, f.st.Store, reconciletest.WithFake(f.rt), reconciletest.At(t0.Add(time.Hour)))
	// A first pass records the spore alive, so its death is a crash.
	_, err := pass.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)
	head := func() uint64 {
		var h state.SporeHead
		require.NoError(t, f.st.Store.View(ctx, func(tx state.Tx) (err error) { h, err = tx.Head(ctx, "lab-r"); return }))
		return h.LastSeq
	}
	seen := head()

	b := newBrowser(t)
	b.login(f)
	b.do(chromedp.Navigate(f.ts.URL+"/ui/spores/lab-r"),
		chromedp.Poll[chromedp.Void](`document.getElementById("live").textContent === "live"`, chromedp.WithPollingTimeout(15*time.Second)))
	// The agent's markdown is markup on the page, made by the server.
	require.Equal(t, []string{"P", "STRONG", "CODE", "UL", "LI", "LI"},
		run(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#conv .md *")).map(function (e) { return e.tagName; })`)))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	before := len(b.lines())

	f.rt.Kill("lab-r", "OOMKilled")
	_, err = pass.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)
	var evs []state.Event
	require.NoError(t, f.st.Store.View(ctx, func(tx state.Tx) (err error) { evs, err = tx.Events(ctx, "lab-r", seen, 0); return }))
	var want []string
	for _, ev := range evs {
		for _, l := range transcript.Lines(ev) {
			require.Equal(t, transcript.KindLifecycle, l.Kind, "the pass writes lifecycle lines: %+v", l)
			want = append(want, l.Text)
		}
	}
	require.NotEmpty(t, want)
	require.True(t, slices.ContainsFunc(want, func(w string) bool { return strings.HasPrefix(w, "restart: ") }),
		"the pass restarted the spore: %q", want)

	b.do(chromedp.Poll[chromedp.Void](`document.querySelectorAll("#conv li[data-seq]").length >= `+strconv.Itoa(before+len(want)),
		chromedp.WithPollingTimeout(15*time.Second)))
	require.True(t, run(b, chromedp.Evaluate[bool](`window.__sameDocument === true`)), "the page reloaded")
	lines := b.lines()
	require.Len(t, lines, before+len(want))
	for i, w := range want {
		l := lines[before+i]
		require.Equal(t, strconv.FormatUint(evs[i].Seq, 10), l.Seq)
		require.Equal(t, "l-lifecycle", l.Cls)
		require.Equal(t, w, l.Text)
		require.Zero(t, l.Kids)
	}
	b.requireQuiet()
	b.screenshot("spore-restart")

	// What the live tail inserted is what a reload renders.
	js := func() string {
		return `Array.from(document.querySelectorAll("#conv li[data-seq]")).slice(` + strconv.Itoa(before) + `).map(function (li) { return li.outerHTML; })`
	}
	live := run(b, chromedp.Evaluate[[]string](js()))
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("conv")))
	require.Equal(t, live, run(b, chromedp.Evaluate[[]string](js())))
	b.requireQuiet()
}

// TestFleetDeathAndRestartInABrowser: the fleet page is open in a real
// Chromium; a spore dies and its row turns dead, then a healing pass
// restarts it and the row comes back, each without a reload (the fleet's
// live stream, re-reading the fleet every 100 ms here).
func TestFleetDeathAndRestartInABrowser(t *testing.T) {
	f := liveFixture(t)
	f.h.fleetLive.every = 100 * time.Millisecond
	ctx := context.Background()
	f.add(state.Spore{Wish: state.Wish{ID: "lab-r", Colony: "lab", Rank: state.RankSpore}}, true, lifecycle(0, "created", ""))
	f.add(state.Spore{Wish: state.Wish{ID: "lab-s", Colony: "lab", Rank: state.RankSpore}}, true, lifecycle(0, "created", ""))
	heal := reconciletest.NewPass(t, f.st.Store, reconciletest.WithFake(f.rt), reconciletest.At(t0.Add(time.Hour)))
	_, err := heal.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)

	row := func(id, want string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](`(function () { var a = document.querySelector('a[href="/ui/spores/`+id+`"]');
			return a !== null && a.closest("tr").className === "b-`+want+`"; })()`, chromedp.WithPollingTimeout(15*time.Second))
	}
	b := newBrowser(t)
	b.login(f)
	b.do(chromedp.Navigate(f.ts.URL+"/ui/"), row("lab-r", "idle"), row("lab-s", "idle"))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))

	f.rt.Kill("lab-r", "OOMKilled")
	b.do(row("lab-r", "dead"))
	require.Equal(t, "Dead", run(b, chromedp.Evaluate[string](`document.querySelector('a[href="/ui/spores/lab-r"]').closest("tr").querySelector(".eff").textContent`)))
	b.screenshot("fleet-dead")

	_, err = heal.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)
	b.do(row("lab-r", "idle"))
	require.True(t, run(b, chromedp.Evaluate[bool](`window.__sameDocument === true`)), "the page reloaded")
	require.Equal(t, "b-idle", run(b, chromedp.Evaluate[string](`document.querySelector('a[href="/ui/spores/lab-s"]').closest("tr").className`)),
		"the other spore's row is as it was")
	b.requireQuiet()
	b.screenshot("fleet-restarted")
}
