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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// gateStore holds the first Update it is asked for until open is
// closed, so the sends that come meanwhile queue behind it; it counts
// the Updates it was asked for.
type gateStore struct {
	state.Store
	entered chan struct{} // closed when the first Update waits
	open    chan struct{}
	once    sync.Once
	updates atomic.Int64
}

func (g *gateStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	g.updates.Add(1)
	g.once.Do(func() {
		close(g.entered)
		<-g.open
	})
	return g.Store.Update(ctx, fn)
}

// groupRig is a server over st whose [arch] tells its spores t-0, t-1
// (awake on the fake runtime), with the gate in front of its sends.
type groupRig struct {
	t    *testing.T
	st   state.Store
	gate *gateStore
	srv  *Server
	ts   *httptest.Server
	tok  string
}

func newGroupRig(t *testing.T, st state.Store) *groupRig {
	ctx := context.Background()
	now := time.Now().UTC()
	tok, hash, err := state.NewToken()
	require.NoError(t, err)
	rt := reconciletest.New()
	all := []state.Spore{{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch}}}
	for i := range 2 {
		all = append(all, state.Spore{Wish: state.Wish{ID: fmt.Sprintf("t-%d", i), Colony: "lab", Rank: state.RankSpore}})
	}
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range all {
			sp.Desired, sp.Created, sp.Updated = state.Running, now, now
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
		}
		return tx.SetTokenHash(ctx, "arch", hash)
	}))
	for _, sp := range all {
		require.NoError(t, rt.Start(ctx, sp, reconcile.Launch{Creds: reconcile.Credentials{BridgeToken: "sbt_test"}}))
	}
	gate := &gateStore{Store: st, entered: make(chan struct{}), open: make(chan struct{})}
	pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.RealClock())
	srv := &Server{Store: gate, Pass: pass, Logger: slog.New(slog.DiscardHandler)}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &groupRig{t: t, st: st, gate: gate, srv: srv, ts: ts, tok: tok}
}

// tell is one forced tell from the [arch] to to: its status and body.
func (r *groupRig) tell(to, requestID string) (int, string) {
	body, _ := json.Marshal(TellRequest{Text: "please look at " + to + " (" + requestID + ")", Force: true})
	req, err := http.NewRequest(http.MethodPost, r.ts.URL+"/spores/"+to+"/prompt", strings.NewReader(string(body)))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+r.tok)
	req.Header.Set(HeaderSpore, "arch")
	req.Header.Set(HeaderRequestID, requestID)
	resp, err := r.ts.Client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *groupRig) queued() int {
	r.srv.sends.mu.Lock()
	defer r.srv.sends.mu.Unlock()
	return len(r.srv.sends.queue)
}

// TestSendsQueuedMeanwhileShareATransaction: a tell that finds none in
// flight is recorded alone and at once; the tells that come while its
// transaction runs are recorded together in the next, each acknowledged
// after it, each once in its target's log and once as "sent" in its
// sender's. When one of them is refused (its target out of reach), it
// gets its own answer and the others land together all the same.
func TestSendsQueuedMeanwhileShareATransaction(t *testing.T) {
	stores := map[string]func(t *testing.T) state.Store{
		"dir": func(t *testing.T) state.Store {
			return statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
		},
		"postgres": func(t *testing.T) state.Store {
			st, _ := statetest.Postgres(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
			return st
		},
	}
	cases := []struct {
		name    string
		queued  []string // the targets told while the first tell's transaction waits
		refused string   // the one among them refused, "" for none
		// updates is the transactions the sends asked for: the first
		// alone, then the group's; a refusal rolls the group back and
		// takes one of its own and one for the others.
		updates int64
		// together is the sends committed in a shared transaction.
		together int64
	}{
		{name: "all land", queued: []string{"t-1", "t-0", "t-1"}, updates: 2, together: 3},
		// The refused one is judged again alone, after the one before
		// it and before the one after it, each of them alone.
		{name: "one refused", queued: []string{"t-1", "nobody", "t-0"}, refused: "nobody", updates: 5, together: 0},
	}
	for store, open := range stores {
		for _, tc := range cases {
			t.Run(store+"/"+tc.name, func(t *testing.T) {
				r := newGroupRig(t, open(t))
				type answer struct {
					to, id string
					status int
					body   string
				}
				answers := make(chan answer, 1+len(tc.queued))
				tell := func(to, id string) {
					go func() {
						status, body := r.tell(to, id)
						answers <- answer{to, id, status, body}
					}()
				}
				tell("t-0", "first")
				<-r.gate.entered
				for i, to := range tc.queued {
					tell(to, fmt.Sprintf("queued-%d", i))
					// One at a time, so the group records them in this order.
					require.Eventually(t, func() bool { return r.queued() == i+1 }, 10*time.Second, time.Millisecond)
				}
				select {
				case a := <-answers:
					t.Fatalf("tell %s answered before its transaction committed: %d %s", a.id, a.status, a.body)
				case <-time.After(50 * time.Millisecond):
				}
				close(r.gate.open)

				landed := map[string]string{} // message id → target
				for range 1 + len(tc.queued) {
					a := <-answers
					if a.to == tc.refused {
						require.Equal(t, http.StatusForbidden, a.status, "tell %s: %s", a.id, a.body)
						continue
					}
					require.Equal(t, http.StatusAccepted, a.status, "tell %s: %s", a.id, a.body)
					var res SendResponse
					require.NoError(t, json.Unmarshal([]byte(a.body), &res))
					require.False(t, res.Duplicate, "tell %s", a.id)
					landed[res.ID] = a.to
				}
				require.Equal(t, tc.updates, r.gate.updates.Load(), "the sends' transactions")
				require.Equal(t, tc.together, r.srv.sends.together.Load(), "the tells recorded together")

				messages := map[string]int{}
				for _, to := range []string{"t-0", "t-1"} {
					for _, ev := range statetest.Events(t, r.st, to) {
						if ev.Kind == state.KindMessage {
							require.Equal(t, to, landed[ev.Action], "message %s in the log of %s", ev.Action, to)
							messages[ev.Action]++
						}
					}
				}
				sent := 0
				for _, ev := range statetest.Events(t, r.st, "arch") {
					if ev.Kind == state.KindLifecycle && ev.Action == "sent" {
						if tc.refused != "" {
							require.NotContains(t, ev.Text, "to "+tc.refused, "nothing charged for the refused tell")
						}
						sent++
					}
				}
				for id := range landed {
					require.Equal(t, 1, messages[id], "message %s once in its target's log", id)
				}
				require.Len(t, messages, len(landed), "no message but the acknowledged ones")
				require.Equal(t, len(landed), sent, "one sent event per acknowledged tell")
			})
		}
	}
}

// panicStore's Update panics, the first only once open is closed.
type panicStore struct {
	state.Store
	entered, open chan struct{}
	once          sync.Once
}

func (p *panicStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	p.once.Do(func() {
		close(p.entered)
		<-p.open
	})
	panic("the store gave up")
}

// TestAPanicWhileRecordingHangsNoSend: a panic while a group is recorded
// (the server answers it 500) answers every send of the group with an
// error and leaves the next send a leader: none waits forever.
func TestAPanicWhileRecordingHangsNoSend(t *testing.T) {
	st := &panicStore{entered: make(chan struct{}), open: make(chan struct{})}
	s := &Server{Store: st}
	send := func(id string) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		_, err = s.sendOnce(context.Background(), outbox.Message{To: "t-0", Kind: state.KindMessage, Text: "hi"}, outbox.Once{ID: id, Sender: "arch"})
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- send("first") }()
	<-st.entered
	for i := range 2 {
		go func() { errs <- send(fmt.Sprint("queued-", i)) }()
		require.Eventually(t, func() bool {
			s.sends.mu.Lock()
			defer s.sends.mu.Unlock()
			return len(s.sends.queue) == i+1
		}, 10*time.Second, time.Millisecond)
	}
	close(st.open)
	for range 3 {
		select {
		case err := <-errs:
			require.ErrorContains(t, err, "the store gave up")
		case <-time.After(10 * time.Second):
			t.Fatal("a send of the group was never answered")
		}
	}
	go func() { errs <- send("later") }()
	select {
	case err := <-errs:
		require.ErrorContains(t, err, "the store gave up")
	case <-time.After(10 * time.Second):
		t.Fatal("the send after the panic found no leader")
	}
}

// faultStore fails, in its second Update (a group's, behind the gate's
// first), the second repeat probe (FindAction, once a send): the second
// send of the group fails on its own statement, once.
type faultStore struct {
	state.Store
	updates atomic.Int64
}

func (f *faultStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	if f.updates.Add(1) != 2 {
		return f.Store.Update(ctx, fn)
	}
	return f.Store.Update(ctx, func(tx state.Tx) error {
		return fn(&faultTx{Tx: tx})
	})
}

type faultTx struct {
	state.Tx
	probes int
}

func (f *faultTx) FindAction(ctx context.Context, id string, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
	if f.probes++; f.probes == 2 {
		return state.Event{}, false, errors.New("injected: the statement failed")
	}
	return f.Tx.FindAction(ctx, id, kind, action, since)
}

// TestAGroupsFailedSendKeepsTheOrder: when a send of a group fails on
// its own, the sends before it are recorded before it and those after
// it after: two tells to one spore, the second failing in the group,
// reach its log in the order they came.
func TestAGroupsFailedSendKeepsTheOrder(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	r := newGroupRig(t, st)
	r.srv.Store = &faultStore{Store: r.gate}
	done := make(chan int, 3)
	tell := func(to, id string) {
		go func() {
			status, _ := r.tell(to, id)
			done <- status
		}()
	}
	tell("t-1", "first")
	<-r.gate.entered
	for i, id := range []string{"a", "b"} {
		tell("t-0", id)
		require.Eventually(t, func() bool { return r.queued() == i+1 }, 10*time.Second, time.Millisecond)
	}
	close(r.gate.open)
	for range 3 {
		require.Equal(t, http.StatusAccepted, <-done)
	}
	var order []string
	for _, ev := range statetest.Events(t, r.st, "t-0") {
		if ev.Kind == state.KindMessage {
			switch {
			case strings.Contains(ev.Text, "(a)"):
				order = append(order, "a")
			case strings.Contains(ev.Text, "(b)"):
				order = append(order, "b")
			}
		}
	}
	require.Equal(t, []string{"a", "b"}, order, "the tells to t-0 in its log's order")
}

// TestACallerThatLeavesWhileQueuedIsNotRecorded: a send whose caller
// leaves while it waits behind a transaction (stuck on a lock, say)
// leaves the queue at once, answered with its caller's error, and is
// never recorded.
func TestACallerThatLeavesWhileQueuedIsNotRecorded(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	r := newGroupRig(t, st)
	first := make(chan int, 1)
	go func() {
		status, _ := r.tell("t-1", "first")
		first <- status
	}()
	<-r.gate.entered
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(r.gate.open) }) }
	defer openGate() // a failure below must not leave the first tell waiting
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := r.srv.sendOnce(ctx, outbox.Message{To: "t-0", Kind: state.KindMessage, Text: "never mind"},
			outbox.Once{ID: "left", Sender: "arch", Window: DedupWindow})
		left <- err
	}()
	require.Eventually(t, func() bool { return r.queued() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-left:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("a send whose caller left still waits behind the transaction in flight")
	}
	require.Zero(t, r.queued(), "it left the queue")
	openGate()
	require.Equal(t, http.StatusAccepted, <-first)
	for _, ev := range statetest.Events(t, r.st, "t-0") {
		require.NotEqual(t, state.KindMessage, ev.Kind, "the send whose caller left was recorded: %+v", ev)
	}
	r.srv.sends.mu.Lock()
	defer r.srv.sends.mu.Unlock()
	require.False(t, r.srv.sends.busy, "the group ended with its last send")
}

// downStore is a store that cannot be reached from its second Update on.
type downStore struct {
	state.Store
	updates atomic.Int64
}

func (d *downStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	if d.updates.Add(1) == 1 {
		return d.Store.Update(ctx, fn)
	}
	return &state.UnavailableError{Op: "begin", Err: errors.New("connection refused")}
}

// TestAGroupOnAStoreGoneIsAnsweredAtOnce: a group whose transaction
// could not reach the store (nothing was written) is answered with that
// error in one go, not recorded again send by send, each waiting as long
// for the store again with every other send queued behind it.
func TestAGroupOnAStoreGoneIsAnsweredAtOnce(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()})
	r := newGroupRig(t, st)
	down := &downStore{Store: r.gate}
	r.srv.Store = down
	statuses := make(chan int, 3)
	tell := func(to, id string) {
		go func() {
			status, _ := r.tell(to, id)
			statuses <- status
		}()
	}
	tell("t-1", "first")
	<-r.gate.entered
	for i := range 2 {
		tell("t-0", fmt.Sprint("queued-", i))
		require.Eventually(t, func() bool { return r.queued() == i+1 }, 10*time.Second, time.Millisecond)
	}
	close(r.gate.open)
	got := map[int]int{}
	for range 3 {
		got[<-statuses]++
	}
	require.Equal(t, 1, got[http.StatusAccepted], "the first tell lands: %v", got)
	require.Equal(t, 2, got[http.StatusServiceUnavailable], "the group's tells are told the store is unavailable: %v", got)
	require.EqualValues(t, 2, down.updates.Load(), "the first tell's transaction and the group's, none again alone")
}
