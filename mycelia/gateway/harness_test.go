package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/mycelia/gateway"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// theKey is the model key only serve holds; no test may find it
// anywhere a spore can see, nor in a log.
const theKey = "sk-ant-api03-the-real-key-SECRET"

// upstream is the fake Messages API behind the gateway, counting what
// reaches it.
type upstream struct {
	fake *fakeapi.Server
	srv  *httptest.Server

	mu       sync.Mutex
	headers  []http.Header // of every request that reached it
	paths    []string
	canceled atomic.Int64 // requests whose client went away before it answered
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{fake: fakeapi.New()}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
		u.fake.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			u.canceled.Add(1)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// calls is how many requests reached the upstream.
func (u *upstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.headers)
}

func (u *upstream) lastHeader() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers[len(u.headers)-1]
}

// failing is a store whose writes fail once failFrom of them have been
// made (0: never): the store going down mid-stream.
type failing struct {
	state.Store
	updates  atomic.Int64
	failFrom atomic.Int64
	// viewsFail: every read fails too.
	viewsFail atomic.Bool
}

func (f *failing) View(ctx context.Context, fn func(state.Tx) error) error {
	if f.viewsFail.Load() {
		return &state.UnavailableError{Op: "view", Err: errors.New("the store is down")}
	}
	return f.Store.View(ctx, fn)
}

func (f *failing) Update(ctx context.Context, fn func(state.Tx) error) error {
	n := f.updates.Add(1)
	if from := f.failFrom.Load(); from > 0 && n >= from {
		return &state.UnavailableError{Op: "update", Err: errors.New("the store is down")}
	}
	return f.Store.Update(ctx, fn)
}

// world is a store with spores, the fake upstream, and a gateway over
// them served on a test server.
type world struct {
	t      testing.TB
	store  *failing
	up     *upstream
	gw     *gateway.Gateway
	srv    *httptest.Server
	tokens map[string]string // spore id → token
	logs   *syncBuffer
	now    time.Time
	// realClock: the gateway reads the process's clock, not now
	// (benchmarks, whose calls would otherwise run out of the rate).
	realClock atomic.Bool
	// metrics is what the gateway reported.
	metrics *recMetrics
}

type sporeOpt func(*state.Spore)

func budget(tokens int64) sporeOpt {
	return func(sp *state.Spore) { sp.Budget = state.Budget{TokensPerDay: tokens} }
}

func desired(d state.Desired) sporeOpt { return func(sp *state.Spore) { sp.Desired = d } }

func newWorld(t testing.TB, settings state.Settings) *world {
	t.Helper()
	settings.Runtime, settings.DefaultSpec = "local", state.DefaultSpec()
	w := &world{t: t, store: &failing{Store: statetest.Dir(t, settings)}, up: newUpstream(t), tokens: map[string]string{},
		logs: &syncBuffer{}, now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), metrics: &recMetrics{}}
	upURL, err := url.Parse(w.up.srv.URL)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.gw = gateway.New(gateway.Config{Store: w.store, Auth: auth.Authenticator{Store: w.store}, Upstream: upURL, Key: theKey,
		Metrics: w.metrics, Logger: log, Now: func() time.Time {
			if w.realClock.Load() {
				return time.Now()
			}
			return w.now
		},
		// Each call reads the fleet: the colonies' spends are exact.
		FleetShare: -1})
	mux := http.NewServeMux()
	w.gw.Register(mux)
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	t.Cleanup(func() { w.noSecretIn("the gateway's log", w.logs.String()) })
	return w
}

// spore makes a spore of colony lab, running, with a token.
func (w *world) spore(id string, opts ...sporeOpt) {
	w.t.Helper()
	ctx := context.Background()
	tok, hash, err := state.NewToken()
	require.NoError(w.t, err)
	sp := state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: w.now, Updated: w.now}}
	for _, o := range opts {
		o(&sp)
	}
	require.NoError(w.t, w.store.Store.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, id, hash)
	}))
	w.tokens[id] = tok
}

// key is spore id's model key, as sporectl gives it to its agent.
func (w *world) key(id string) string { return id + ":" + w.tokens[id] }

// answer is what a spore was answered.
type answer struct {
	status int
	header http.Header
	body   string
	err    error // reading the body failed: the answer was cut
}

// call makes a model call as Claude Code does, with key.
func (w *world) call(key, path, body string) answer {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.srv.URL+path, strings.NewReader(body))
	require.NoError(w.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	return w.do(req)
}

func (w *world) do(req *http.Request) answer {
	w.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, rerr := b.ReadFrom(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: b.String(), err: rerr}
	w.noSecretIn("an answer", a.body)
	for name, vs := range resp.Header {
		w.noSecretIn("the answer's header "+name, strings.Join(vs, " "))
	}
	return a
}

// noSecretIn fails the test when s holds the key.
func (w *world) noSecretIn(where, s string) {
	w.t.Helper()
	if strings.Contains(s, theKey) {
		w.t.Errorf("the model key is in %s", where)
	}
}

// counted is what the gateway counted of id today.
func (w *world) counted(id string) state.Usage {
	w.t.Helper()
	return statetest.Spore(w.t, w.store.Store, id).GatewayRecord.CountedOn(w.now)
}

const (
	streamed = `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
	whole    = `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`
)

// syncBuffer is a log the gateway's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recMetrics records what the gateway reported.
type recMetrics struct {
	mu       sync.Mutex
	requests map[string]int // "colony code"
	tokens   map[string]state.Usage
	upstream int
}

func (m *recMetrics) ModelRequest(colony string, code int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.requests == nil {
		m.requests = map[string]int{}
	}
	m.requests[colony+" "+http.StatusText(code)]++
}

func (m *recMetrics) ModelTokens(colony string, u state.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]state.Usage{}
	}
	m.tokens[colony] = m.tokens[colony].Add(u)
}

func (m *recMetrics) ModelUpstream(time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.upstream++
}
