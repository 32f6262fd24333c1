package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// busyColony adds, to the golden colony, spores with activity:
//
//	busy   colony lab   asleep since minute 5; today 4 tool calls,
//	                    1234 tokens, $0.42; yesterday 2 calls, 9999 tokens
//	chatty colony far   asleep, more events than the tail reads, none a
//	                    transition
func (f *fixture) busyColony() {
	f.colony()
	hour := t0.Truncate(time.Hour) // 10:00, now is 11:00
	f.add(state.Spore{
		Wish: state.Wish{ID: "busy", Colony: "lab", Rank: state.RankSpore},
		Status: state.Status{IngestRecord: state.IngestRecord{Activity: []state.HourActivity{
			{Hour: hour.Add(-11 * time.Hour), ToolCalls: 2, InputTokens: 9999},
			{Hour: hour, Turns: 3, ToolCalls: 4, InputTokens: 1000, OutputTokens: 234, CostMicros: 420_000},
		}}},
	}, false, lifecycle(0, "created", ""), text(1, "working on it"), lifecycle(5, "slept", "desired Running → Paused"), lifecycle(6, "delivered", "prompt p1 delivered"))
	evs := []state.Event{lifecycle(0, "created", "")}
	for i := range TailEvents + 4 {
		evs = append(evs, text(10+i, "chat"))
	}
	f.add(state.Spore{Wish: state.Wish{ID: "chatty", Colony: "far", Rank: state.RankSpore}}, false, evs...)
}

// rowHTML is the <tr> of spore id in a page.
func rowHTML(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `<a href="/ui/spores/`+id+`">`)
	require.GreaterOrEqual(t, i, 0, "no row of %s", id)
	start := strings.LastIndex(body[:i], "<tr")
	end := strings.Index(body[i:], "</tr>")
	return body[start : i+end]
}

func TestFleetRows(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	a := f.get("/ui/")
	require.Equal(t, http.StatusOK, a.status, a.body)

	busy := rowHTML(t, a.body, "busy")
	// In its state since the last transition: the delivery after it is none.
	require.Contains(t, busy, `<td class="since"><time datetime="2026-05-01T10:05:00Z">55m</time></td>`)
	// Today is the UTC day: yesterday's 9999 tokens are not in it.
	require.Contains(t, busy, `<td class="today" title="since 00:00 UTC: 1000 input and 234 output tokens, $0.420000">1.2k tok · $0.42</td>`)
	// A sparkline of the last 24 hours: two hours with tool calls, the
	// larger one full height.
	// 12 hours before now's: half the height; the hour before now's (the
	// last slot is x=69): full height.
	require.Contains(t, busy, `<svg class="spark" width="72" height="16" role="img"><title>tool calls per hour, last 24 h: 6 in all, at most 4 in an hour</title>`+
		`<path d="M33 8h2v8h-2zM66 0h2v16h-2z"/></svg>`)

	// More events than the tail and no transition among them: a bound.
	chatty := rowHTML(t, a.body, "chatty")
	require.Contains(t, chatty, `<td class="since">≥ 46m</td>`)
	require.Contains(t, chatty, `>0 tok · $0</td>`)
	require.NotContains(t, chatty, "<path ")

	// A spore the pass just found dead is so since that pass's event.
	require.Contains(t, rowHTML(t, a.body, "lab-c"), `<td class="since"><time datetime="2026-05-01T11:00:00Z">0s</time></td>`)
	require.NotContains(t, a.body, "http://", "no xmlns or any absolute URL")
}

func TestSinceOf(t *testing.T) {
	now := at(60)
	created := at(-30)
	require.Equal(t, since{Text: "1h", At: "2026-05-01T09:30:00Z"}, sinceOf(nil, created, now), "no events: since created")
	require.Equal(t, since{}, sinceOf(nil, time.Time{}, now))
	evs := []state.Event{lifecycle(1, "created", ""), lifecycle(20, "health", "Dead"), lifecycle(30, "loop", ""), text(40, "x")}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	require.Equal(t, since{Text: "40m", At: "2026-05-01T10:20:00Z"}, sinceOf(evs, created, now))
	evs = append(evs, state.Event{Seq: 5, Kind: state.KindBreaker, Action: "opened", At: at(59)})
	require.Equal(t, "1m", sinceOf(evs, created, now).Text)
	tail := []state.Event{{Seq: 90, Kind: state.KindAgent, At: at(10)}, {Seq: 91, Kind: state.KindLifecycle, Action: "delivered", At: at(50)}}
	require.Equal(t, since{Text: "≥ 50m", Bound: true}, sinceOf(tail, created, now))
}

func TestFleetFilters(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	for _, tc := range []struct {
		query string
		shown []string
		strip string
	}{
		{"", []string{"far-x", "chatty", "arch", "lab-a", "lab-b", "lab-c", "busy"}, "1 working"},
		{"colony=lab", []string{"arch", "lab-a", "lab-b", "lab-c", "busy"}, `<span class="b-asleep">2 asleep</span>`},
		{"state=asleep", []string{"chatty", "lab-b", "busy"}, `<span class="b-asleep">3 asleep</span>`},
		{"colony=lab&state=asleep", []string{"lab-b", "busy"}, `<span class="b-asleep">2 asleep</span>`},
		{"q=LAB-", []string{"lab-a", "lab-b", "lab-c"}, `<span class="b-idle">0 idle</span>`},
		{"q=a&state=working", []string{"lab-a"}, `<span class="b-working">1 working</span>`},
		{"colony=&state=&q=", []string{"far-x", "chatty", "arch", "lab-a", "lab-b", "lab-c", "busy"}, "1 working"},
		{"colony=nowhere", nil, "0 working"},
	} {
		a := f.get("/ui/?" + tc.query)
		require.Equal(t, http.StatusOK, a.status, tc.query)
		for _, id := range []string{"far-x", "chatty", "arch", "lab-a", "lab-b", "lab-c", "busy"} {
			link := `<a href="/ui/spores/` + id + `">`
			if contains(tc.shown, id) {
				require.Contains(t, a.body, link, "%s shows %s", tc.query, id)
			} else {
				require.NotContains(t, a.body, link, "%s hides %s", tc.query, id)
			}
		}
		require.Contains(t, a.body, tc.strip, tc.query)
		if len(tc.shown) == 0 {
			require.Contains(t, a.body, "No spores match this filter.")
		}
		// The live stream follows the same filter.
		v, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		ff, err := parseFleetFilter(v)
		require.NoError(t, err)
		require.Contains(t, a.body, `data-events="`+strings.ReplaceAll(ff.href("/ui/fleet/events"), "&", "&amp;")+`"`)
	}
	// The strip's buckets and the colonies are links that keep the rest
	// of the filter.
	a := f.get("/ui/?colony=lab&q=b")
	require.Contains(t, a.body, `<a href="/ui/?colony=lab&amp;q=b&amp;state=asleep">asleep</a> 2`)
	require.Contains(t, a.body, `<a href="/ui/?q=b">all</a>`)
	require.Contains(t, a.body, `colony: <a href="/ui/?q=b">all</a> · <a href="/ui/?colony=far&amp;q=b">far</a> · <strong>lab</strong>`)
	require.Contains(t, a.body, `<option selected>lab</option>`)
	require.Contains(t, a.body, `name="q" value="b"`)

	observes := f.rt.Calls("Observe")
	for _, q := range []string{"colony=Lab", "colony=-x", "colony=%3Cscript%3E", "state=sleeping", "state=Working", "q=" + strings.Repeat("x", MaxFilterText+1),
		"q=%01", "q=%ff", "colony=lab&colony=far", "state=dead&state=idle", "limit=5",
		"page=0", "page=-1", "page=+2", "page=x", "page=1.5", "page=%202", "page=1000001", "page=99999999999999999999", "page=1&page=2"} {
		for _, path := range []string{"/ui/?", "/ui/fleet/events?"} {
			a := f.get(path+q, "Accept", "text/html")
			require.Equal(t, http.StatusBadRequest, a.status, path+q)
			requireSecure(t, a)
			require.NotContains(t, a.body, "<script>", path+q)
		}
	}
	require.Equal(t, observes, f.rt.Calls("Observe"), "a bad filter runs no pass")
	require.Contains(t, f.get("/ui/?state=sleeping").body, "one of working, idle, blocked, dead, asleep, suspect, error, diverged")
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// sse reads a stream's events (name and data, its data lines joined) into
// a channel until the stream ends.
func (f *fixture) sse(t *testing.T, ctx context.Context, path string) <-chan [2]string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := f.ts.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	require.NotEmpty(t, resp.Header.Get("Content-Security-Policy"))
	ch := make(chan [2]string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var name string
		var data []string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if name != "" || data != nil {
					ch <- [2]string{name, strings.Join(data, "\n")}
				}
				name, data = "", nil
			case strings.HasPrefix(l, "event: "):
				name = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = append(data, strings.TrimPrefix(l, "data: "))
			}
		}
	}()
	return ch
}

// nextFleet waits for the stream's next "fleet" event that holds want.
func nextFleet(t *testing.T, ch <-chan [2]string, want string) string {
	t.Helper()
	for ev := range ch {
		if ev[0] == "fleet" && strings.Contains(ev[1], want) {
			return ev[1]
		}
	}
	t.Fatalf("the stream ended without a fleet event holding %q", want)
	return ""
}

func TestFleetStream(t *testing.T) {
	f := newFixture(t)
	f.busyColony()
	f.h.fleetLive.every = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := f.sse(t, ctx, "/ui/fleet/events?colony=lab")
	first := nextFleet(t, ch, `id="strip"`)
	require.Contains(t, first, `<span class="b-dead">1 dead</span>`)
	require.NotContains(t, first, "far-x", "the stream keeps the page's filter")
	// The fragment is the page's own rendering of the same rows.
	page := f.get("/ui/?colony=lab").body
	require.Contains(t, page, first)

	// The store changes (the arch's process dies, busy gets a tool call):
	// the next rows say so without a reload.
	f.rt.Kill("arch", "OOMKilled")
	later := nextFleet(t, ch, `<span class="b-dead">2 dead</span>`)
	require.Contains(t, rowHTML(t, later, "arch"), `<td class="eff">Dead</td>`)
	require.NotContains(t, later, "<script")
	cancel()
	for range ch {
	}
}

func TestFleetStreamSharesOnePass(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.h.fleetLive.every = time.Hour // nothing is read again in this test
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.get("/ui/")
	observes := f.rt.Calls("Observe")
	var chs []<-chan [2]string
	for range 3 {
		ch := f.sse(t, ctx, "/ui/fleet/events")
		nextFleet(t, ch, `id="strip"`)
		chs = append(chs, ch)
	}
	require.Equal(t, observes, f.rt.Calls("Observe"), "streams within the interval reuse the page's pass")
	cancel()
	for _, ch := range chs {
		for range ch {
		}
	}
}

func TestFleetStreamLimitAndShutdown(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.h.MaxStreams = 1
	f.h.streams.Store(1)
	a := f.get("/ui/fleet/events", "Accept", "text/event-stream")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Equal(t, "10", a.header.Get("Retry-After"))
	require.Equal(t, int64(1), f.h.streams.Load())
	f.h.streams.Store(0)

	// Shutdown ends a stream that is running: the first rows were sent
	// before it comes.
	ctx, stop := context.WithCancel(context.Background())
	f.h.Shutdown = ctx
	req, err := http.NewRequest(http.MethodGet, f.ts.URL+"/ui/fleet/events", nil)
	require.NoError(t, err)
	resp, err := f.ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() && sc.Text() != "event: fleet" {
	}
	require.True(t, sc.Scan(), "the first rows")
	require.True(t, strings.HasPrefix(sc.Text(), `data: <p class="strip" id="strip">`), sc.Text())
	stop()
	for sc.Scan() {
	}
	require.Eventually(t, func() bool { return f.h.streams.Load() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the stream ended on shutdown")
}

// TestFleetXSS: hostile text in agent lines, in a filter's text and in a
// hand-edited store's values stays text in the page and in the stream's
// fragments.
func TestFleetXSS(t *testing.T) {
	f := newFixture(t)
	f.add(state.Spore{Wish: state.Wish{ID: "evil", Colony: "lab", Rank: state.RankSpore}}, true,
		lifecycle(0, "created", xss), text(1, "here is "+xss+"\n<img src=x onerror=alert(2)>"),
		toolUse(2, "Bash", map[string]any{"command": "echo '" + xss + "'"}))
	f.h.fleetLive.every = 20 * time.Millisecond
	q := "?q=" + url.QueryEscape(`e"><script>alert(1)</script>`)
	// The filter's text matches nothing, and is shown as text.
	a := f.get("/ui/" + q)
	require.Equal(t, http.StatusOK, a.status, a.body)
	requireSecure(t, a)
	require.NotContains(t, a.body, xss)
	require.Contains(t, a.body, `value="e&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`)
	require.Equal(t, 1, strings.Count(a.body, "<script"), "only the page's own script")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []string{"/ui/fleet/events", "/ui/fleet/events" + q} {
		frag := nextFleet(t, f.sse(t, ctx, p), `id="strip"`)
		require.NotContains(t, frag, "<script", p)
		require.NotContains(t, frag, "<img", p)
	}
	frag := nextFleet(t, f.sse(t, ctx, "/ui/fleet/events"), "evil")
	require.Contains(t, frag, "echo &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;")

	// A hand-edited store's colony, id and activity figures through the
	// fragment's template.
	row := rowOf(reconcileHealth(xss))
	row.Since = since{Text: xss, At: xss}
	row.Today = today{Tokens: xss, Cost: xss, Title: xss}
	row.Spark = sparkline{W: 1, H: 1, Label: xss, D: xss}
	d := &fleetData{total: 1, rows: []fleetRow{row}, full: []fleetRow{row}, filled: []bool{true}, orphans: []string{xss}, observeErr: xss}
	p, err := f.h.fleetPageOf(ctx, d, fleetFilter{Q: xss}, "", 0)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, pages().ExecuteTemplate(&b, "fleetbody", p))
	require.NotContains(t, b.String(), xss)
	require.NotContains(t, b.String(), "<script")
	require.Contains(t, b.String(), "&lt;script&gt;")
	require.NotContains(t, b.String(), `href="/ui/?colony=`, "a colony that is not a name gets no link")

	// A carriage return in a fragment cannot end an SSE line early.
	var sb strings.Builder
	w := bufio.NewWriter(&sb)
	writeFragment(w, "fleet", "a\rdata: x\nb\n")
	require.NoError(t, w.Flush())
	require.Equal(t, "event: fleet\ndata: a&#13;data: x\ndata: b\n\n", sb.String())
}

func reconcileHealth(s string) reconcile.SporeHealth {
	return reconcile.SporeHealth{ID: s, Colony: s, Rank: state.Rank(s), Swarm: s, Role: s, Desired: state.Desired(s),
		Effective: policy.Health(s), Reason: s, Code: reconcile.Reason(s)}
}

// Lines the page's own pass ingests come after the snapshot the rows'
// activity is read from: that record is read again, so they count at
// once.
func TestFleetRowsCountWhatThePassIngested(t *testing.T) {
	f := newFixture(t)
	f.colony()
	ctx := context.Background()
	hour := t0.Truncate(time.Hour)
	rt := f.h.Pass.Runtime
	f.h.Pass.Runtime = func(c context.Context, s state.Settings) (reconcile.Runtime, error) {
		// After the pass loaded its snapshot: what its ingest writes.
		require.NoError(t, f.st.Store.Update(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, "arch")
			if err != nil {
				return err
			}
			sp.BridgeSeq = 7
			sp.Activity = []state.HourActivity{{Hour: hour, ToolCalls: 5, OutputTokens: 2000, CostMicros: 30_000}}
			if _, err := storetest.Put(ctx, tx, sp); err != nil {
				return err
			}
			_, err = tx.Append(ctx, "arch", []state.Event{{Kind: state.KindAgent, At: at(30), BridgeSeq: 7, Line: []byte(`{"type":"result"}`)}})
			return err
		}))
		f.h.Pass.Runtime = rt
		return rt(c, s)
	}
	a := f.get("/ui/")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, rowHTML(t, a.body, "arch"), ">2k tok · $0.03</td>")
	require.Contains(t, rowHTML(t, a.body, "lab-a"), ">0 tok · $0</td>")

	require.True(t, ingestedSince([]state.Event{{Kind: state.KindAgent, BridgeSeq: 8}, lifecycle(1, "health", "")}, 7))
	require.False(t, ingestedSince([]state.Event{{Kind: state.KindAgent, BridgeSeq: 7}, lifecycle(1, "health", "")}, 7))
	require.False(t, ingestedSince(nil, 0))
}
