package mycelia

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// countingStore is statetest's counting store with its count where this
// package's tests read it (h.st.updates).
type countingStore struct {
	*statetest.Counting
	updates *atomic.Int64
}

func newCountingStore(st state.Store) *countingStore {
	c := &statetest.Counting{Store: st}
	return &countingStore{Counting: c, updates: &c.Updates}
}

// harness is a real directory store, reconciletest's fake runtime and
// bridges (with a Compact), and the server over them on httptest.
type harness struct {
	t      *testing.T
	st     *countingStore
	rt     *reconciletest.Runtime
	srv    *Server
	ts     *httptest.Server
	logs   *testutil.Buffer
	tokens map[string]string
	// compacts counts Compact calls per spore.
	compacts sync.Map
	// noHosts makes the runtime one without hosts (reconcile.HostRuntime).
	noHosts atomic.Bool
	// ahead moves the server's clock (Server.Now) that far past the
	// time, for what a window of time changes.
	ahead atomic.Int64
}

func (h *harness) runtime() reconcile.Runtime {
	if h.noHosts.Load() {
		return h.rt
	}
	return hostsRuntime{h.rt}
}

// hostsRuntime adds reconcile.HostRuntime to the fake runtime: a host "bridge of
// ID" per spore it observes, whose log is three lines naming it.
type hostsRuntime struct{ *reconciletest.Runtime }

func (r hostsRuntime) Hosts(ctx context.Context) (reconcile.HostList, error) {
	obs, err := r.Observe(ctx, nil)
	if err != nil {
		return reconcile.HostList{}, err
	}
	l := reconcile.HostList{Runtime: "fake", Metrics: "fake figures"}
	mem, cpu := int64(1<<20), 0.5
	for id, po := range obs.Spores {
		l.Hosts = append(l.Hosts, reconcile.Host{Name: "bridge of " + id, Spore: id, State: string(po.State), Restarts: po.Restarts, MemoryBytes: &mem, CPUSeconds: &cpu})
	}
	return l, nil
}

func (r hostsRuntime) HostLogs(ctx context.Context, name string, tail int) (string, error) {
	id := strings.TrimPrefix(name, "bridge of ")
	obs, err := r.Observe(ctx, nil)
	if err != nil {
		return "", err
	}
	if _, ok := obs.Spores[id]; !ok {
		return "", state.ErrNotFound
	}
	return "one " + id + "\ntwo " + id + "\nthree " + id + "\n", nil
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ds := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	h := &harness{t: t, st: newCountingStore(ds), rt: reconciletest.New(), logs: &testutil.Buffer{}, tokens: map[string]string{}}
	h.rt.AgentLines = func(p bridge.PromptRequest) []string {
		b, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]string{"type": "text", "text": "echo: " + p.Text}}}})
		return []string{string(b)}
	}
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pass := reconciletest.NewPass(t, h.st, reconciletest.WithRuntimeFunc(func(context.Context, state.Settings) (reconcile.Runtime, error) { return h.runtime(), nil }),
		reconciletest.WithDial(h.dial), reconciletest.WithLogger(log), reconciletest.RealClock())
	h.srv = &Server{Store: h.st, Pass: pass, Logger: log, Now: func() time.Time { return time.Now().Add(time.Duration(h.ahead.Load())) }}
	h.ts = httptest.NewServer(h.srv)
	t.Cleanup(h.ts.Close)
	return h
}

// compactingBridge is a fake bridge with the bridge's /v1/compact: a
// "/compact" prompt, as the real one queues.
type compactingBridge struct {
	*reconciletest.Bridge
	h *harness
}

func (b compactingBridge) Compact(ctx context.Context) (bridge.PromptAccepted, error) {
	n, _ := b.h.compacts.LoadOrStore(b.ID, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return b.Prompt(ctx, bridge.PromptRequest{ID: "compact-" + time.Now().Format(time.RFC3339Nano), From: "bridge:compact", Text: "/compact"})
}

func (h *harness) dial(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
	c, err := h.rt.Dial(ep)
	if err != nil {
		return nil, err
	}
	return compactingBridge{Bridge: c.(*reconciletest.Bridge), h: h}, nil
}

func (h *harness) compactsOf(id string) int64 {
	n, ok := h.compacts.Load(id)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// add creates sp with a token and a first prompt in its log; awake ones
// are started on the fake runtime.
func (h *harness) add(sp state.Spore, awake bool) {
	h.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	sp.Created, sp.Updated, sp.Desired = now, now, state.Paused
	if awake {
		sp.Desired = state.Running
	}
	tok, hash, err := state.NewToken()
	require.NoError(h.t, err)
	h.tokens[sp.ID] = tok
	require.NoError(h.t, h.st.Store.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return err
		}
		if err := tx.SetTokenHash(ctx, sp.ID, hash); err != nil {
			return err
		}
		_, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindPrompt, From: "user:alice", At: now, Text: "hello " + sp.ID}})
		return err
	}))
	if awake {
		require.NoError(h.t, h.rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	}
}

// The colony every test of the API starts from:
//
//	arch       [arch]    colony lab                    awake
//	lab-myco   [colony]  colony lab                    awake
//	lab-lead   [swarm]   colony lab, swarm red, lead   awake
//	lab-a      spore     colony lab, swarm red, coder  awake
//	lab-b      spore     colony lab, swarm red, tester asleep
//	lab-c      spore     colony lab                    awake
//	far-myco   [colony]  colony far                    asleep
//	far-x      spore     colony far, swarm red, scout  awake
func (h *harness) colony() *harness {
	h.add(state.Spore{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "lab-myco", Colony: "lab", Rank: state.RankColony}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "lab-lead", Colony: "lab", Rank: state.RankSwarm, Swarm: "red", Role: "lead"}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "lab-a", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "coder"}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "lab-b", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "tester"}}, false)
	h.add(state.Spore{Wish: state.Wish{ID: "lab-c", Colony: "lab", Rank: state.RankSpore}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "far-myco", Colony: "far", Rank: state.RankColony}}, false)
	h.add(state.Spore{Wish: state.Wish{ID: "far-x", Colony: "far", Rank: state.RankSpore, Swarm: "red", Role: "scout"}}, true)
	h.st.updates.Store(0)
	return h
}

// callers are the colony's spore of each rank.
var callers = map[state.Rank]string{
	state.RankSpore:  "lab-a",
	state.RankSwarm:  "lab-lead",
	state.RankColony: "lab-myco",
	state.RankArch:   "arch",
}

type response struct {
	status int
	body   []byte
	header http.Header
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "answer: %s", r.body)
}

// do sends a request as caller (no credentials when caller is "") with
// body: a string or []byte as it is, anything else as JSON.
func (h *harness) do(caller, method, path string, body any, hdr ...string) response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.ts.URL+path, rd)
	require.NoError(h.t, err)
	if caller != "" {
		req.Header.Set("Authorization", "Bearer "+h.tokens[caller])
		req.Header.Set(HeaderSpore, caller)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := h.ts.Client().Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return response{status: resp.StatusCode, body: b, header: resp.Header}
}

// events is the spore's whole log.
func (h *harness) events(id string) []state.Event {
	h.t.Helper()
	return statetest.Events(h.t, h.st, id)
}

// messages are the spore's message events.
func (h *harness) messages(id string) []state.Event {
	var out []state.Event
	for _, ev := range h.events(id) {
		if ev.Kind == state.KindMessage {
			out = append(out, ev)
		}
	}
	return out
}

// prompts are what the spore's fake bridge took.
func (h *harness) prompts(id string) []bridge.PromptRequest {
	return h.rt.BridgeOf(id).Prompts()
}

func (h *harness) spore(id string) state.Spore {
	h.t.Helper()
	return statetest.Spore(h.t, h.st, id)
}

// agentLines appends agent lines to id's log, stamped now.
func (h *harness) agentLines(id string, lines ...string) {
	h.t.Helper()
	ctx := context.Background()
	var evs []state.Event
	for _, l := range lines {
		evs = append(evs, state.Event{Kind: state.KindAgent, At: time.Now().UTC(), Line: json.RawMessage(l)})
	}
	require.NoError(h.t, h.st.Store.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, id, evs)
		return err
	}))
}

func initLine(cwd string) string {
	b, _ := json.Marshal(map[string]any{"type": "system", "subtype": "init", "cwd": cwd, "session_id": "s"})
	return string(b)
}

func toolUseLine(id, name string, input any) string {
	b, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
	return string(b)
}

func toolResultLine(id string, isError bool, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": isError, "content": content}}}})
	return string(b)
}

// setDesired records id's desired state (not counted as a request's
// write) and starts or stops it on the fake runtime to match.
func (h *harness) setDesired(id string, d state.Desired) {
	h.t.Helper()
	ctx := context.Background()
	var sp state.Spore
	require.NoError(h.t, h.st.Store.Update(ctx, func(tx state.Tx) error {
		var err error
		if sp, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		sp.Desired, sp.Updated = d, time.Now().UTC()
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
	if d == state.Running {
		require.NoError(h.t, h.rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
		return
	}
	require.NoError(h.t, h.rt.Stop(ctx, id))
}
