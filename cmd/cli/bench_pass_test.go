package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// Benchmarks of commands that run the pass (docs/performance.md "The
// pass"), in-process through RunWith with a runtime stub in the Factory.
//
//	go test -run '^$' -bench 'PromptToIdle|^BenchmarkStatus$' -benchmem -count 5 ./cmd/cli/

const passBenchToken = "bench-bridge-token-0123456789abcdef"

// passBenchFactory is a factory for one command line against store, its
// output in out, with rt as the runtime.
func passBenchFactory(store string, out io.Writer, rt func() reconcile.Runtime) *Factory {
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return store
		}
		return ""
	}
	f.NewRuntime = func(context.Context, state.Store, state.Settings) (reconcile.Runtime, error) { return rt(), nil }
	return f
}

func passBenchRun(b *testing.B, store string, rt func() reconcile.Runtime, args ...string) string {
	b.Helper()
	var out, errb bytes.Buffer
	f := passBenchFactory(store, &out, rt)
	f.IO.ErrOut = &errb
	if code := RunWith(context.Background(), f, args); code != 0 {
		b.Fatalf("sporectl %s exited %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// BenchmarkPromptToIdleSpore: `sporectl prompt ID TEXT` to an awake, idle
// spore whose bridge is real (bridge/server with the echo agent, over
// loopback HTTP), from the start of the command until it returns with
// the bridge's acceptance: record the prompt (one transaction), run the
// pass over the spore (observe, ingest the previous turn's lines,
// deliver, commit), print. Between prompts the benchmark waits, untimed,
// until the echo turn is over and the bridge is idle again.
func BenchmarkPromptToIdleSpore(b *testing.B) {
	root := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, server.Config{Home: filepath.Join(root, "home"), Token: passBenchToken, Agent: agent.Echo{}})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.RunAgent(ctx) }()
	ts := httptest.NewServer(srv.Handler())
	defer func() { cancel(); <-done; ts.Close(); _ = srv.Close() }()
	client, err := bridge.NewClient(ts.URL, passBenchToken, nil)
	if err != nil {
		b.Fatal(err)
	}

	const id = "idle-1"
	store := filepath.Join(root, "store")
	now := time.Now().UTC()
	statetest.Create(b, statetest.DirAt(b, store, state.Settings{Runtime: "local"}),
		state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}})
	rt := &reconciletest.Static{Endpoints: map[string]reconcile.BridgeEndpoint{id: {BaseURL: ts.URL, Token: passBenchToken}}}
	runtime := func() reconcile.Runtime { return rt }
	waitIdle := func() {
		deadline := time.Now().Add(time.Minute)
		for {
			st, err := client.Status(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if st.State == bridge.StateIdle && st.Queue == 0 {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("the bridge is not idle: %+v", st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitIdle()
	passBenchRun(b, store, runtime, "status") // settles health, ingests bridge_started

	lat := make([]time.Duration, 0, b.N)
	var out bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		waitIdle()
		out.Reset()
		f := passBenchFactory(store, &out, runtime)
		args := []string{"prompt", id, "please run the tests again, round " + strconv.Itoa(i), "-o", "json"}
		b.StartTimer()

		t0 := time.Now()
		code := RunWith(ctx, f, args)
		lat = append(lat, time.Since(t0))

		if code != 0 || !strings.Contains(out.String(), `"state": "delivered"`) {
			b.Fatalf("prompt exited %d: %s", code, out.String())
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// --- BenchmarkStatus ---

const passBenchFleetSize = 10_000

// passBenchFleet is a store of 10,000 spores with nothing new for
// `status` to ingest. Awake: all desired Running and running under the
// fake runtime, whose bridges are served over loopback HTTP and hold
// exactly the lines the store holds. Asleep: all desired Paused, one
// event each, nothing running (nothing to ask but the runtime).
type passBenchFleet struct {
	store string
	rt    *reconciletest.Runtime
	http  *reconciletest.HTTP
}

// buildPassBenchFleet builds the fleet for one benchmark call (the
// package has no TestMain to remove a fixture shared by all calls).
func buildPassBenchFleet(b *testing.B, awake bool) *passBenchFleet {
	b.Helper()
	ctx := context.Background()
	f := &passBenchFleet{store: filepath.Join(b.TempDir(), "store"), rt: reconciletest.New()}
	f.http = reconciletest.NewHTTP(f.rt)
	b.Cleanup(f.http.Close)
	ds := statetest.DirAt(b, f.store, state.Settings{Runtime: "local"})
	now := time.Now().UTC()
	ids := make([]string, passBenchFleetSize)
	for i := range ids {
		ids[i] = fmt.Sprintf("spore-%05d", i)
	}
	// One transaction: the directory store's cost is per transaction and
	// per new event file.
	err := ds.Update(ctx, func(tx state.Tx) error {
		for _, id := range ids {
			sp := state.Spore{
				Wish: state.Wish{ID: id, Colony: "colony-" + id[len(id)-1:], Rank: state.RankSpore, Desired: state.Paused, Spec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}, Created: now, Updated: now},
			}
			if awake {
				sp.Desired = state.Running
			}
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
			if !awake {
				if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "created", At: now}}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if awake {
		// Start every spore (as `reconcile` would), give each bridge
		// three agent lines for `status` to ingest.
		pass := reconciletest.NewPass(b, ds, reconciletest.WithRuntime(f.http.Runtime()), reconciletest.RealClock())
		if _, err := pass.Run(ctx, reconcile.Options{Heal: true}); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			f.rt.BridgeOf(id).Write(
				fmt.Sprintf(`{"type":"system","subtype":"init","session_id":"s-%s"}`, id),
				fmt.Sprintf(`{"type":"assistant","session_id":"s-%s","message":{"role":"assistant","content":[{"type":"text","text":"reading the repository"}]}}`, id),
				`{"type":"result","subtype":"success","is_error":false,"result":"done"}`)
		}
	}
	_ = ds.Close()
	// The first status ingests and records health; the second must find
	// nothing to do.
	passBenchRun(b, f.store, f.http.Runtime, "status", "-o", "json")
	passBenchRun(b, f.store, f.http.Runtime, "status", "-o", "json")
	return f
}

// BenchmarkStatus: `status -o json` over 10,000 spores with nothing new
// to ingest (the pass: load, observe, ingest nothing, plan, no commit),
// against what status did before the pass, written out here (one View of
// spores and heads, reconcile.Observe, reconcile.Health for each, print).
// awake: every spore runs and both ask every bridge over loopback HTTP;
// asleep: nothing runs, so the store, the plan and the printing are all
// there is. One op runs each three times, alternating which goes first;
// the figures are the medians of those runs, ratio = pass / before.
func BenchmarkStatus(b *testing.B) {
	for _, awake := range []bool{true, false} {
		name := "asleep"
		if awake {
			name = "awake"
		}
		b.Run(name, func(b *testing.B) {
			f := buildPassBenchFleet(b, awake)
			ctx := context.Background()
			var pass, before []time.Duration
			for op := 0; b.Loop(); op++ {
				passFirst := op%2 == 0
				for k := range 6 {
					t0 := time.Now()
					if (k%2 == 0) == passFirst {
						if code := RunWith(ctx, passBenchFactory(f.store, io.Discard, f.http.Runtime), []string{"status", "-o", "json"}); code != 0 {
							b.Fatalf("status exited %d", code)
						}
						pass = append(pass, time.Since(t0))
					} else {
						fac := passBenchFactory(f.store, io.Discard, f.http.Runtime)
						fac.Global.Output = "json"
						if err := statusBeforeThePass(ctx, fac); err != nil {
							b.Fatal(err)
						}
						before = append(before, time.Since(t0))
					}
				}
			}
			p, o := passBenchMedian(pass), passBenchMedian(before)
			b.ReportMetric(float64(p.Microseconds())/1000, "pass-ms")
			b.ReportMetric(float64(o.Microseconds())/1000, "before-ms")
			b.ReportMetric(p.Seconds()/o.Seconds(), "ratio")
		})
	}
}

func passBenchMedian(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// statusBeforeThePass is `status` as it was before the pass (commit
// c48eddc, cmd/cli/status.go): read spores and heads in one View, observe,
// judge each spore, print; nothing written.
func statusBeforeThePass(ctx context.Context, f *Factory) error {
	st, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var out oldStatusList
	err = st.View(ctx, func(tx state.Tx) error {
		spores, err := tx.Spores(ctx)
		if err != nil {
			return err
		}
		heads, err := tx.Heads(ctx)
		if err != nil {
			return err
		}
		out.Spores = make([]oldSporeStatus, 0, len(spores))
		for _, s := range spores {
			out.Spores = append(out.Spores, oldSporeStatus{ID: s.ID, Colony: s.Colony, Rank: s.Rank, Desired: s.Desired,
				LastSeq: heads[s.ID].LastSeq, breaker: s.BreakerOpen})
		}
		return nil
	})
	if err != nil {
		return err
	}
	ids := make([]string, len(out.Spores))
	for i, s := range out.Spores {
		ids[i] = s.ID
	}
	var observed map[string]reconcile.Observed
	rt, err := f.Runtime(ctx, st)
	if err == nil {
		observed, out.Orphans, err = reconcile.Observe(ctx, rt, ids)
	}
	if err != nil {
		return err
	}
	for i := range out.Spores {
		s := &out.Spores[i]
		obs := observed[s.ID]
		v := reconcile.Health(s.Desired, obs, s.breaker)
		e := string(v.Effective)
		s.Observed, s.Effective, s.Reason = &obs, &e, v.Text
		if !policy.OK(v.Effective) {
			return fmt.Errorf("before the pass: %s is %s (%s)", s.ID, v.Effective, v.Text)
		}
	}
	return f.Print(out)
}

type oldSporeStatus struct {
	ID        string              `json:"id"`
	Colony    string              `json:"colony"`
	Rank      state.Rank          `json:"rank"`
	Desired   state.Desired       `json:"desired"`
	Observed  *reconcile.Observed `json:"observed"`
	Effective *string             `json:"effective"`
	Reason    string              `json:"reason"`
	LastSeq   uint64              `json:"last_seq"`
	breaker   bool
}

type oldStatusList struct {
	Spores  []oldSporeStatus `json:"spores"`
	Orphans []string         `json:"orphans,omitempty"`
}

func (l oldStatusList) Table(bool) ([]string, [][]string) { return nil, nil }
func (l oldStatusList) Names() []string                   { return nil }
