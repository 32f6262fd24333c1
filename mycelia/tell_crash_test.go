package mycelia

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestTellsAcrossAPostgresCrash: 8 clients tell as one sender (half of
// the tells with the address check, half forced), each tell retried with its request id until it is acknowledged, while PostgreSQL
// crashes (pg_ctl -m immediate) twice under them, so the crash lands
// inside tells' transactions — between a statement batch and the next,
// before or during COMMIT — and some clients also give up on a request
// mid-flight. Concurrent tells share transactions (sendgroup.go), and
// every sixth is to a stopped spore, refused inside such a group.
// Afterwards every tell is acknowledged or refused, each acknowledged
// one is recorded exactly once: one message event in its target's log,
// one "sent" event in the sender's, nothing left queued; none
// acknowledged is lost, none refused recorded, and some were recorded
// together.
func TestTellsAcrossAPostgresCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and crashes a PostgreSQL server of its own")
	}
	ctx := context.Background()
	srv, err := pgtest.Start(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("no PostgreSQL server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	_, url, err := srv.CreateDatabase(ctx)
	require.NoError(t, err)
	st, _, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}, pgstore.Options{ConnectAttempts: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	const (
		clients  = 8
		perTell  = 12 // tells per client
		nTargets = 4
	)
	rt := reconciletest.New()
	now := time.Now().UTC()
	tok, hash, err := state.NewToken()
	require.NoError(t, err)
	all := []state.Spore{{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch}}}
	for i := range nTargets {
		all = append(all, state.Spore{Wish: state.Wish{ID: fmt.Sprintf("t-%d", i), Colony: "lab", Rank: state.RankSpore}})
	}
	// A message from a spore never wakes a stopped one: refused.
	const stopped = "t-stopped"
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range all {
			sp.Desired, sp.Created, sp.Updated = state.Running, now, now
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
		}
		off := state.Spore{Wish: state.Wish{ID: stopped, Colony: "lab", Rank: state.RankSpore, Desired: state.Stopped}}
		off.Created, off.Updated = now, now
		if err := tx.CreateSpore(ctx, off); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "arch", hash)
	}))
	for _, sp := range all {
		require.NoError(t, rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	}
	cut := &cutStore{Store: st}
	pass := reconciletest.NewPass(t, cut, reconciletest.WithFake(rt), reconciletest.RealClock())
	s := &Server{Store: cut, Pass: pass, Logger: slog.New(slog.DiscardHandler), RateLimit: 10000}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)

	// tell sends one attempt; acked reports a 202. A client that gives up
	// early (abandon) cancels its request mid-flight.
	tell := func(to, requestID string, force bool, abandon time.Duration) (acked bool, answer string) {
		body, _ := json.Marshal(TellRequest{Text: "please run the tests of " + to, Force: force})
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if abandon > 0 {
			rctx, cancel = context.WithTimeout(ctx, abandon)
		}
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, ts.URL+"/spores/"+to+"/prompt", strings.NewReader(string(body)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set(HeaderSpore, "arch")
		req.Header.Set(HeaderRequestID, requestID)
		resp, err := ts.Client().Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusAccepted, fmt.Sprintf("%d %s", resp.StatusCode, b)
	}

	type sentTell struct{ to, requestID string }
	var (
		acks     atomic.Int64
		failures atomic.Int64 // attempts not acknowledged
		// storeDown counts attempts answered 5xx: cut off by a crash.
		storeDown atomic.Int64
		refused   atomic.Int64
		mu        sync.Mutex
		done      []sentTell
	)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for k := range perTell {
				tl := sentTell{to: fmt.Sprintf("t-%d", (c+k)%nTargets), requestID: fmt.Sprintf("crash-%d-%d", c, k)}
				if (c+k)%6 == 5 {
					tl.to = stopped
				}
				deadline := time.Now().Add(2 * time.Minute)
				for attempt := 0; ; attempt++ {
					var abandon time.Duration
					if attempt == 0 && k%5 == 2 {
						abandon = time.Duration(1+c) * time.Millisecond // gone before the answer
					}
					ok, answer := tell(tl.to, tl.requestID, tl.to == stopped || k%2 == 1, abandon)
					if ok && tl.to == stopped {
						t.Errorf("tell %s to the stopped %s acknowledged: %s", tl.requestID, tl.to, answer)
						return
					}
					if tl.to == stopped && strings.HasPrefix(answer, "409 ") {
						refused.Add(1)
						break
					}
					if ok {
						break
					}
					failures.Add(1)
					if abandon == 0 && strings.HasPrefix(answer, "5") {
						storeDown.Add(1)
					}
					if time.Now().After(deadline) {
						t.Errorf("tell %s to %s never acknowledged; last answer: %s", tl.requestID, tl.to, answer)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				if tl.to == stopped {
					continue
				}
				acks.Add(1)
				mu.Lock()
				done = append(done, tl)
				mu.Unlock()
			}
		})
	}
	// Two crashes while the tells run, each once some were acknowledged.
	for _, at := range []int64{clients * perTell / 4, clients * perTell / 2} {
		require.Eventually(t, func() bool { return acks.Load() >= at || t.Failed() }, 2*time.Minute, time.Millisecond)
		require.NoError(t, srv.Stop("immediate"), "crash PostgreSQL")
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, srv.Start(ctx), "start PostgreSQL again")
	}
	wg.Wait()
	require.Len(t, done, clients*perTell-int(refused.Load()), "every tell acknowledged in the end but the refused")
	t.Logf("%d attempts not acknowledged, %d of them answered 5xx; %d transactions cut by a crash; %d refused; %d recorded in a shared transaction",
		failures.Load(), storeDown.Load(), cut.cut.Load(), refused.Load(), s.sends.together.Load())
	// A group cut by a crash records its sends again alone, and those
	// often land once the server is back: the crash is then seen in the
	// transactions it cut, not in an answer.
	require.Positive(t, storeDown.Load()+cut.cut.Load(), "some attempts met the crashes")
	require.Positive(t, refused.Load(), "some tells were to the stopped spore")
	require.Positive(t, s.sends.together.Load(), "some tells were recorded together")

	// Exactly once: each acknowledged tell is one message event in its
	// target's log and one "sent" in the sender's; nothing else is.
	messages := map[string]int{}
	for _, sp := range append(all[1:], state.Spore{Wish: state.Wish{ID: stopped}}) {
		for _, ev := range statetest.Events(t, st, sp.ID) {
			if ev.Kind == state.KindMessage {
				messages[ev.Action]++
			}
		}
	}
	sentEvents := map[string]int{}
	for _, ev := range statetest.Events(t, st, "arch") {
		if ev.Kind == state.KindLifecycle && ev.Action == "sent" {
			sentEvents[ev.Text]++
		}
	}
	for _, tl := range done {
		id := messageID("arch", tl.to, tl.requestID)
		require.Equal(t, 1, messages[id], "tell %s to %s: its message events", tl.requestID, tl.to)
		require.Equal(t, 1, sentEvents[fmt.Sprintf("message %s to %s", id, tl.to)], "tell %s to %s: its sent events", tl.requestID, tl.to)
	}
	require.Len(t, messages, len(done), "no message but the tells'")
	require.Len(t, sentEvents, len(done), "no sent event but the tells'")
	// A tell acknowledged while its delivery met the crash waits in the
	// outbox ("the next reconcile delivers it"): the next pass does.
	_, err = pass.Run(ctx, reconcile.Options{Deliver: true})
	require.NoError(t, err)
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		for _, sp := range all[1:] {
			q, err := tx.Outbox(ctx, sp.ID)
			if err != nil {
				return err
			}
			require.Empty(t, q, "%s: every acknowledged tell delivered", sp.ID)
		}
		return nil
	}))
}

// cutStore counts the transactions of serve and its passes that failed
// for want of the server (state.UnavailableError).
type cutStore struct {
	state.Store
	cut atomic.Int64
}

func (c *cutStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	return c.count(c.Store.Update(ctx, fn))
}

func (c *cutStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return c.count(c.Store.View(ctx, fn))
}

func (c *cutStore) count(err error) error {
	var down *state.UnavailableError
	if errors.As(err, &down) {
		c.cut.Add(1)
	}
	return err
}
