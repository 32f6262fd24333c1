package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// fakeChanges is a Changes whose changes the test sends; it counts the
// watches running and can fail the next ones.
type fakeChanges struct {
	mu      sync.Mutex
	ch      chan string // the running watch's channel
	running atomic.Int32
	starts  atomic.Int32
	fail    atomic.Int32 // how many of the next Watch calls fail
}

func (f *fakeChanges) Watch(ctx context.Context) (<-chan string, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("store unreachable")
	}
	f.fail.Store(0)
	ch := make(chan string)
	f.mu.Lock()
	f.ch = ch
	f.mu.Unlock()
	f.running.Add(1)
	f.starts.Add(1)
	out := make(chan string)
	go func() {
		defer f.running.Add(-1)
		defer close(out)
		defer func() {
			f.mu.Lock()
			if f.ch == ch {
				f.ch = nil
			}
			f.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case id, ok := <-ch:
				if !ok {
					return
				}
				out <- id
			}
		}
	}()
	return out, nil
}

// send delivers id to the running watch, once one runs, and returns when
// the watch took it.
func (f *fakeChanges) send(id string) {
	for {
		f.mu.Lock()
		ch := f.ch
		f.mu.Unlock()
		if ch != nil {
			ch <- id
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// end makes the running watch fail (its channel closes).
func (f *fakeChanges) end() {
	f.mu.Lock()
	close(f.ch)
	f.ch = nil
	f.mu.Unlock()
}

func woken(s *subscription) bool {
	select {
	case <-s.Wake:
		return true
	default:
		return false
	}
}

// waitWoken waits for s's wake (bounded: a hang fails, it asserts no
// speed).
func waitWoken(t *testing.T, s *subscription) {
	t.Helper()
	select {
	case <-s.Wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("subscriber of %s not woken", s.id)
	}
}

// TestHubWakesOnStart: a watch, once up, wakes its subscribers, so what
// changed between a subscriber's first read and the moment the store
// began to listen is read then, not at the next safety poll.
func TestHubWakesOnStart(t *testing.T) {
	src := &fakeChanges{}
	h := newHub(src, slog.New(slog.DiscardHandler))
	s, cancel := h.subscribe("a")
	defer cancel()
	waitWoken(t, s)
	require.False(t, woken(s), "once")
}

func TestHubWakesTheSporesSubscribers(t *testing.T) {
	src := &fakeChanges{}
	h := newHub(src, slog.New(slog.DiscardHandler))
	var as, bs []*subscription
	var cancels []func()
	for range 50 {
		a, ca := h.subscribe("a")
		b, cb := h.subscribe("b")
		as, bs, cancels = append(as, a), append(bs, b), append(cancels, ca, cb)
	}

	// flush returns once the hub has handled everything sent before it:
	// each send returns when the source took it, so by the second the
	// first's predecessor has been handled by the hub.
	flush := func() { src.send("-"); src.send("-") }
	// The watch's start woke those subscribed by then
	// (TestHubWakesOnStart): clear that first.
	flush()
	for i := range as {
		woken(as[i])
		woken(bs[i])
	}
	src.send("a")
	src.send("c") // nobody's
	src.send("a") // merges with the first: one wake pending
	flush()
	require.Equal(t, int32(1), src.starts.Load(), "one watch for every subscriber")
	for i := range as {
		require.True(t, woken(as[i]), "a[%d]", i)
		require.False(t, woken(as[i]), "a[%d] woken twice: wakes merge", i)
		require.False(t, woken(bs[i]), "b[%d] woken by a's change", i)
	}
	src.send("")
	flush()
	for i := range as {
		require.True(t, woken(as[i]), "a[%d] by \"\"", i)
		require.True(t, woken(bs[i]), "b[%d] by \"\"", i)
	}
	src.send("b")
	flush()
	for i := range bs {
		require.True(t, woken(bs[i]), "b[%d]", i)
		require.False(t, woken(as[i]), "a[%d] woken by b's change", i)
	}

	// The last one to leave stops the watch; the next to come starts one.
	for _, c := range cancels {
		c()
		c() // twice is harmless
	}
	require.NoError(t, h.idle(context.Background()))
	require.Zero(t, src.running.Load())
	require.Empty(t, h.subs)
	s, c := h.subscribe("a")
	defer c()
	src.send("a") // reaches the new watch
	waitWoken(t, s)
	require.Equal(t, int32(2), src.starts.Load())
}

// TestHubRestartsAFailedWatch: a watch that cannot start or that ends is
// started again, and everyone is woken when it is back (changes may have
// been missed meanwhile).
func TestHubRestartsAFailedWatch(t *testing.T) {
	src := &fakeChanges{}
	src.fail.Store(2)
	h := newHub(src, slog.New(slog.DiscardHandler))
	s, cancel := h.subscribe("a")
	defer cancel()
	waitWoken(t, s) // the first watch that started after a failure
	require.Equal(t, int32(1), src.starts.Load())
	src.end()
	waitWoken(t, s)
	require.Equal(t, int32(2), src.starts.Load())
	src.send("a")
	waitWoken(t, s)
}

// liveFixture is a fixture whose live tails are woken by the dir store
// itself and never poll in a test's time: a line that arrives came by
// the hub.
func liveFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.h.live.src = f.st.Store.(Changes)
	f.h.Poll = time.Hour
	return f
}

// openStream starts a live tail and returns a reader of its lines.
func (f *fixture) openStream(ctx context.Context, t *testing.T, path string) (*bufio.Scanner, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+path, nil)
	require.NoError(t, err)
	resp, err := f.ts.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return bufio.NewScanner(resp.Body), func() { cancel(); resp.Body.Close() }
}

// nextLines reads the stream up to its next "lines" event and decodes it.
func nextLines(t *testing.T, sc *bufio.Scanner) []liveLine {
	t.Helper()
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && !strings.HasPrefix(d, "the ") {
			var ls []liveLine
			if json.Unmarshal([]byte(d), &ls) == nil {
				return ls
			}
		}
	}
	t.Fatalf("the stream ended: %v", sc.Err())
	return nil
}

// TestLivePush: many streams of one spore each get a new line, pushed
// (they would poll only after an hour), rendered by line.html; when the
// clients go, their subscriptions go, the watch stops and no goroutine
// is left.
func TestLivePush(t *testing.T) {
	f := liveFixture(t)
	f.add(stateSpore("p"), false, lifecycle(0, "created", ""))
	f.add(stateSpore("q"), false)
	base := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 20
	scs := make([]*bufio.Scanner, n)
	closers := make([]func(), n)
	for i := range scs {
		scs[i], closers[i] = f.openStream(ctx, t, "/ui/spores/p/events?after=1")
	}
	require.Eventually(t, func() bool {
		f.h.hub().mu.Lock()
		defer f.h.hub().mu.Unlock()
		return len(f.h.hub().subs["p"]) == n
	}, 10*time.Second, 5*time.Millisecond)

	f.append("q", text(1, "not p's"))
	f.append("p", text(2, "*pushed* <script>alert(1)</script>"))
	for i, sc := range scs {
		ls := nextLines(t, sc)
		require.Len(t, ls, 1, "stream %d", i)
		require.Equal(t, uint64(2), ls[0].Seq)
		require.Equal(t, `<li class="l-text" data-seq="2"><span class="seq">2</span> <div class="text md inline"><em>pushed</em> &lt;script&gt;alert(1)&lt;/script&gt;</div></li>`, ls[0].HTML)
	}

	for _, c := range closers {
		c()
	}
	require.Eventually(t, func() bool {
		f.h.hub().mu.Lock()
		defer f.h.hub().mu.Unlock()
		return f.h.hub().n == 0
	}, 10*time.Second, 5*time.Millisecond, "a closed stream leaves the hub")
	require.NoError(t, f.h.hub().idle(ctx))
	f.ts.CloseClientConnections()
	// (Not require.Eventually: it runs its condition on a goroutine of
	// its own.)
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before the streams, %d after:\n%s", base, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestLivePushShutdown: serve's shutdown ends every stream, and with them
// the store's watch.
func TestLivePushShutdown(t *testing.T) {
	f := liveFixture(t)
	f.add(stateSpore("p"), false)
	stop, shutdown := context.WithCancel(context.Background())
	f.h.Shutdown = stop
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var scs []*bufio.Scanner
	for range 5 {
		sc, c := f.openStream(ctx, t, "/ui/spores/p/events")
		defer c()
		scs = append(scs, sc)
	}
	require.Eventually(t, func() bool { return f.h.streams.Load() == 5 }, 10*time.Second, 5*time.Millisecond)
	shutdown()
	for _, sc := range scs {
		for sc.Scan() {
		}
	}
	require.Zero(t, f.h.streams.Load())
	require.NoError(t, f.h.hub().idle(ctx))
}

// TestLivePushGone: a spore deleted while followed ends its streams at
// once (the watch names it).
func TestLivePushGone(t *testing.T) {
	f := liveFixture(t)
	f.add(stateSpore("p"), false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, c := f.openStream(ctx, t, "/ui/spores/p/events")
	defer c()
	require.Eventually(t, func() bool { return f.h.streams.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, f.st.Store.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "p") }))
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	require.Equal(t, []string{"the spore was deleted"}, dataOf(got, "gone"))
}

// TestLivePushPostgres: on PostgreSQL, as serve wires it (the Handler
// finds the store's LISTEN/NOTIFY by itself), a line committed through
// another handle of the store (its own pool, as another process or serve
// replica would) reaches every stream, pushed.
func TestLivePushPostgres(t *testing.T) {
	fixtures.mu.Lock()
	s, url := statetest.Postgres(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	fixtures.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	other, err := pgstore.Open(ctx, url, pgstore.Options{})
	require.NoError(t, err)
	defer other.Close()
	sp := stateSpore("p")
	sp.Created, sp.Updated, sp.Desired = t0, t0, state.Paused
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, sp) }))

	f := &fixture{t: t, h: &Handler{Store: s, Now: func() time.Time { return t0.Add(time.Hour) }, Poll: time.Hour}}
	f.ts = httptest.NewServer(f.h)
	defer f.ts.Close()
	f.session = f.loginAs(f.ts.Client(), fixtureOperator, fixtureToken)
	require.NotNil(t, f.h.hub(), "the PostgreSQL store is a Changes")
	var scs []*bufio.Scanner
	for range 3 {
		sc, c := f.openStream(ctx, t, "/ui/spores/p/events")
		defer c()
		scs = append(scs, sc)
	}
	require.Eventually(t, func() bool {
		f.h.hub().mu.Lock()
		defer f.h.hub().mu.Unlock()
		return len(f.h.hub().subs["p"]) == 3
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "p", []state.Event{text(1, "from elsewhere")})
		return err
	}))
	for _, sc := range scs {
		ls := nextLines(t, sc)
		require.Len(t, ls, 1)
		require.Equal(t, "from elsewhere", ls[0].Text)
	}
}
