package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// env is the world of the pass's tests: a store, the fake runtime and a
// clock the test moves.
type env struct {
	t   *testing.T
	st  *statetest.Counting
	rt  *reconciletest.Runtime
	now time.Time
	// runtime, when set, is what the pass runs over instead of rt (a
	// wrapper of it); the bridges are still rt's.
	runtime reconcile.Runtime
}

func newEnv(t *testing.T, ids ...string) *env {
	t.Helper()
	return newEnvOn(t, statetest.Dir(t, state.Settings{Runtime: "local"}), ids...)
}

// newEnvOn is an env over st with the given spores in colony lab, asleep.
func newEnvOn(t *testing.T, st state.Store, ids ...string) *env {
	t.Helper()
	e := &env{t: t, st: &statetest.Counting{Store: st}, rt: reconciletest.New(), now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	for _, id := range ids {
		statetest.Create(t, st, state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Paused, Created: e.now, Updated: e.now}})
	}
	return e
}

func (e *env) pass() *reconcile.Pass {
	ps := reconciletest.NewPass(e.t, e.st, reconciletest.WithFake(e.rt), reconciletest.WithClock(func() time.Time { return e.now }))
	if e.runtime != nil {
		reconciletest.WithRuntime(e.runtime)(ps)
	}
	return ps
}

func (e *env) run(opt reconcile.Options) *reconcile.Outcome {
	e.t.Helper()
	out, err := e.pass().Run(context.Background(), opt)
	require.NoError(e.t, err)
	return out
}

func (e *env) heal() *reconcile.Outcome {
	return e.run(reconcile.Options{Heal: true, Deliver: true})
}

func (e *env) spore(id string) state.Spore {
	e.t.Helper()
	return statetest.Spore(e.t, e.st, id)
}

func (e *env) events(id string) []state.Event {
	e.t.Helper()
	return statetest.Events(e.t, e.st, id)
}

func (e *env) setDesired(id string, d state.Desired) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		sp.Desired = d
		sp.Generation++
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
}

func actions(evs []state.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind != state.KindAgent {
			out = append(out, e.Action)
		}
	}
	return out
}

func agentSeqs(evs []state.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		if e.Kind == state.KindAgent {
			out = append(out, e.BridgeSeq)
		}
	}
	return out
}

func health(out *reconcile.Outcome, id string) reconcile.SporeHealth {
	for _, s := range out.Spores {
		if s.ID == id {
			return s
		}
	}
	return reconcile.SporeHealth{}
}

func TestPassIngestsOnceAndWritesNothingWhenNothingChanged(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal() // starts it
	b := e.rt.BridgeOf("a")
	b.Write(`{"type":"assistant","n":1}`, `{"type":"assistant","n":2}`, "not json")

	out := e.run(reconcile.Options{}) // a read-only command: ingest and commit
	require.Equal(t, policy.Healthy, health(out, "a").Effective)
	require.Equal(t, []uint64{1, 2, 3}, agentSeqs(e.events("a")))
	require.Equal(t, uint64(3), e.spore("a").BridgeSeq)

	before := e.st.Updates.Load()
	e.run(reconcile.Options{})
	e.heal()
	require.Equal(t, before, e.st.Updates.Load(), "a pass with nothing new must not open a write transaction")

	b.Write(`{"type":"result"}`)
	e.run(reconcile.Options{})
	require.Equal(t, []uint64{1, 2, 3, 4}, agentSeqs(e.events("a")), "every line exactly once, in order")
}

func TestPassIngestGapIsRecordedOnceNeverRenumbered(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	b := e.rt.BridgeOf("a")
	b.Write(`{"n":1}`)
	e.run(reconcile.Options{})
	b.Skip()
	b.Write(`{"n":3}`)

	out := e.run(reconcile.Options{})
	h := health(out, "a")
	require.Equal(t, policy.Suspect, h.Effective)
	require.Equal(t, reconcile.ReasonIngestGap, h.Code)
	require.Equal(t, []uint64{1}, agentSeqs(e.events("a")), "nothing after the gap is accepted")
	n := len(e.events("a"))
	e.run(reconcile.Options{})
	require.Len(t, e.events("a"), n, "the gap is one event, not one per pass")
	last := e.events("a")[n-1]
	require.Equal(t, "health", last.Action)
	require.Contains(t, last.Text, "expected the bridge's line 2, got 3")
}

func TestPassBridgeLogLostThenReset(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	b := e.rt.BridgeOf("a")
	b.Write(`{"n":1}`, `{"n":2}`)
	e.run(reconcile.Options{})
	b.Wipe()
	b.Write(`{"new":1}`)

	out := e.heal()
	require.Equal(t, reconcile.ReasonBridgeLogLost, health(out, "a").Code)
	require.Equal(t, 1, e.rt.Calls("Start"), "a lost log is not a crash: nothing is restarted")
	require.Equal(t, []uint64{1, 2}, agentSeqs(e.events("a")))

	// The new log grows past the old one's length: still not the old log.
	b.Write(`{"new":2}`, `{"new":3}`, `{"new":4}`)
	out = e.heal()
	require.Equal(t, reconcile.ReasonBridgeLogLost, health(out, "a").Code)
	require.Equal(t, []uint64{1, 2}, agentSeqs(e.events("a")), "lines of another log taken as this one's")
}

func TestPassReplacedLogOfTheSameLengthIsCaught(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	b := e.rt.BridgeOf("a")
	b.Write(`{"old":1}`, `{"old":2}`)
	e.run(reconcile.Options{})
	b.Wipe()
	b.Write(`{"new":1}`, `{"new":2}`, `{"new":3}`) // longer at once: never seen behind
	out := e.run(reconcile.Options{})
	require.Equal(t, reconcile.ReasonBridgeLogLost, health(out, "a").Code)
	require.Equal(t, []uint64{1, 2}, agentSeqs(e.events("a")))
}

func TestPassHealsWithBackoffAndOpensTheBreaker(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	out := e.heal()
	require.Equal(t, 1, e.rt.Calls("Start"))
	require.True(t, out.Plans[0].Start && !out.Plans[0].Crash, "the first start after a wake is no crash")
	e.run(reconcile.Options{})
	require.Equal(t, policy.Healthy, e.spore("a").Health)

	recovery := state.RecoveryPolicy{}.WithDefaults()
	wait := time.Duration(recovery.BackoffInitial)
	for crash := 1; crash < recovery.BreakerFailures; crash++ {
		e.rt.Kill("a", "OOMKilled")
		out = e.heal()
		p := out.Plans[0]
		require.True(t, p.Start && p.Crash, "crash %d: respawned", crash)
		require.Equal(t, e.now.Add(wait), p.NotBefore, "crash %d: backoff", crash)
		require.Equal(t, crash, e.spore("a").Restarts)

		// Dies again at once: not respawned before its time.
		e.rt.Kill("a", "OOMKilled")
		out = e.heal()
		require.False(t, out.Plans[0].Start, "crash %d: respawned before the backoff ran out", crash)
		require.Equal(t, policy.Dead, health(out, "a").Effective)
		e.now = e.now.Add(wait)
		wait = min(2*wait, time.Duration(recovery.BackoffMax))
	}
	out = e.heal()
	require.True(t, out.Plans[0].OpenBreaker, "the %d-th crash in the window opens the breaker", recovery.BreakerFailures)
	require.True(t, e.spore("a").BreakerOpen)
	starts := e.rt.Calls("Start")
	out = e.heal()
	require.Equal(t, policy.Error, health(out, "a").Effective)
	require.Equal(t, starts, e.rt.Calls("Start"), "no respawn while the breaker is open")

	acts := actions(e.events("a"))
	require.Equal(t, recovery.BreakerFailures-1, count(acts, "restart"))
	require.Equal(t, 1, count(acts, "opened"))
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func TestPassLongHealthyStretchForgetsCrashes(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	e.run(reconcile.Options{})
	e.rt.Kill("a", "Exited")
	e.heal()
	require.Len(t, e.spore("a").Failures, 1)
	e.now = e.now.Add(time.Duration(state.RecoveryPolicy{}.WithDefaults().HealthyAfter))
	e.heal()
	require.Empty(t, e.spore("a").Failures)
	require.True(t, e.spore("a").NotBefore.IsZero())
}

func TestPassStopsWhatRunsWhileAsleep(t *testing.T) {
	e := newEnv(t, "a")
	e.rt.Set(reconcile.PodObservation{ID: "a", State: reconcile.PodRunning, Ready: true})
	out := e.run(reconcile.Options{})
	require.Equal(t, policy.Diverged, health(out, "a").Effective)
	require.Zero(t, e.rt.Calls("Stop"), "a read-only pass never acts")
	out = e.heal()
	require.True(t, out.Plans[0].Stop)
	require.Equal(t, 1, e.rt.Calls("Stop"))
	out = e.heal()
	require.Equal(t, policy.Paused, health(out, "a").Effective)
}

func enqueue(t *testing.T, st state.Store, id, entry, text string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: entry, Spore: id, From: "user:test", Text: text})
		return err
	}))
}

func pending(t *testing.T, st state.Store, id string) []state.OutboxEntry {
	t.Helper()
	out := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, id) })
	return out
}

func TestPassDeliversExactlyOnce(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	enqueue(t, e.st, "a", "p-1", "hello")
	out := e.heal()
	require.True(t, out.Plans[0].Start)
	require.Empty(t, out.Plans[0].Deliver, "nothing is delivered to a spore that is only now starting")
	require.Len(t, pending(t, e.st, "a"), 1)

	out = e.heal()
	require.Len(t, out.Plans[0].Delivered, 1)
	require.Empty(t, pending(t, e.st, "a"))
	require.Len(t, e.rt.BridgeOf("a").Prompts(), 1)

	// A pass that died after posting but before its commit left the entry
	// queued: the next one re-sends it, the bridge says duplicate.
	enqueue(t, e.st, "a", "p-2", "again")
	_, err := e.rt.BridgeOf("a").Prompt(context.Background(), bridge.PromptRequest{ID: "p-2", Text: "again"})
	require.NoError(t, err)
	out = e.heal()
	require.True(t, out.Plans[0].Delivered[0].Duplicate)
	require.Empty(t, pending(t, e.st, "a"))
	require.Len(t, e.rt.BridgeOf("a").Prompts(), 2, "each prompt reached the agent exactly once")
	require.Equal(t, 2, count(actions(e.events("a")), "delivered"))
}

func TestPassNewerWishIsNotOverwritten(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	// A pass observes, then a person puts the spore to sleep before the
	// pass commits: the commit must keep Paused and judge against it.
	ps := e.pass()
	ps.Runtime = func(ctx context.Context, s state.Settings) (reconcile.Runtime, error) {
		e.rt.Kill("a", "Exited")
		return wishChanger{Runtime: e.rt, do: func() { e.setDesired("a", state.Paused) }}, nil
	}
	starts := e.rt.Calls("Start")
	out, err := ps.Run(context.Background(), reconcile.Options{Heal: true})
	require.NoError(t, err)
	require.True(t, out.Plans[0].Start, "the pass planned a respawn on the old wish")
	require.Equal(t, starts+1, e.rt.Calls("Start"), "Start is called: it asks the store under its lock, and starts nothing")
	fleet, err := e.rt.Observe(context.Background(), nil)
	require.NoError(t, err)
	require.NotEqual(t, reconcile.PodRunning, fleet.Spores["a"].State, "a spore put to sleep meanwhile was started anyway")
	sp := e.spore("a")
	require.Equal(t, state.Paused, sp.Desired, "the newer wish survives the pass")
	require.Zero(t, sp.Restarts, "a respawn that was not made was counted")
	out = e.heal()
	require.Equal(t, policy.Paused, health(out, "a").Effective)
	require.True(t, out.Plans[0].Stop, "what is left of the dead spore goes: asleep means no pod")
	out = e.heal()
	require.Equal(t, policy.Paused, health(out, "a").Effective)
	require.False(t, out.Plans[0].Stop)
}

// A pass that plans to stop a spore running while asleep does not stop it
// if a person woke it meanwhile.
func TestPassWakeRacingAStopKeepsItRunning(t *testing.T) {
	e := newEnv(t, "a")
	e.rt.Set(reconcile.PodObservation{ID: "a", State: reconcile.PodRunning, Ready: true})
	ps := e.pass()
	ps.Runtime = func(ctx context.Context, s state.Settings) (reconcile.Runtime, error) {
		return wishChanger{Runtime: e.rt, do: func() { e.setDesired("a", state.Running) }}, nil
	}
	out, err := ps.Run(context.Background(), reconcile.Options{Heal: true})
	require.NoError(t, err)
	require.True(t, out.Plans[0].Stop, "the pass planned a stop on the old wish")
	require.Zero(t, e.rt.Calls("Stop"), "a spore woken meanwhile was stopped")
	require.NotContains(t, actions(e.events("a")), "stop")
}

// wishChanger changes the store's wish right after the runtime is observed.
type wishChanger struct {
	reconcile.Runtime
	do func()
}

func (w wishChanger) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	o, err := w.Runtime.Observe(ctx, ids)
	w.do()
	return o, err
}

func TestPassObservationHasOneDeadline(t *testing.T) {
	var ids []string
	for i := range 200 {
		ids = append(ids, fmt.Sprintf("s-%03d", i))
	}
	e := newEnv(t, ids...)
	for _, id := range ids {
		e.setDesired(id, state.Running)
	}
	e.heal()
	for _, id := range ids {
		e.rt.BridgeOf(id).SetHang(true)
	}
	ps := e.pass()
	ps.ObserveDeadline = 100 * time.Millisecond
	start := time.Now()
	out, err := ps.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	// 200 hanging bridges, 64 asked at a time: without one deadline this
	// would take ⌈200/64⌉ × the per-call limit.
	require.Less(t, time.Since(start), 5*time.Second)
	// The first 64 were asked and did not answer: Down. The others' turn
	// came after the deadline: never asked, so Unknown, not Down.
	asked, notAsked := 0, 0
	for _, s := range out.Spores {
		switch s.Code {
		case reconcile.ReasonBridgeNotAnswer:
			require.Equal(t, reconcile.BridgeDown, s.Observed.Bridge, s.ID)
			asked++
		case reconcile.ReasonBridgeNotAsked:
			require.Equal(t, reconcile.BridgeUnknown, s.Observed.Bridge, s.ID)
			require.Equal(t, policy.Suspect, s.Effective, s.ID)
			notAsked++
		default:
			t.Fatalf("%s: %s (%s)", s.ID, s.Code, s.Observed.Bridge)
		}
	}
	require.Equal(t, 200, asked+notAsked)
	require.LessOrEqual(t, asked, 64, "at most one round of 64 was asked before the deadline")
	require.Positive(t, asked)
}

func TestPassObservationFailedActsOnNothing(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.rt.ObserveErr = fmt.Errorf("api server down")
	out := e.heal()
	require.Error(t, out.ObserveErr)
	require.Equal(t, policy.Suspect, health(out, "a").Effective)
	require.Zero(t, e.rt.Calls("Start"), "acting on a fleet nobody could observe is acting blind")
}

func TestPassNamedMissingSpore(t *testing.T) {
	e := newEnv(t, "a")
	out := e.run(reconcile.Options{IDs: []string{"a", "nope"}})
	require.ErrorIs(t, out.Missing, state.ErrNotFound)
	require.True(t, strings.Contains(out.Missing.Error(), "nope"))
	require.Len(t, out.Spores, 1)
}

func TestPassRacingStartKeepsTheTokenTheSporeGot(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	var got state.TokenHash
	ps := e.pass()
	ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) {
		return &hashRacer{Runtime: e.rt, st: e.st, got: &got}, nil
	}
	_, err := ps.Run(context.Background(), reconcile.Options{Heal: true})
	require.NoError(t, err)
	stored := statetest.Read(t, e.st, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "a") })
	require.NotEmpty(t, got)
	require.Equal(t, got, stored, "the store must hold the hash of the token the running spore has")
	require.NotContains(t, actions(e.events("a")), "start", "the racer's start is not ours to record")
}

// hashRacer starts the spore with its own token (hash committed after
// ours, as a second pass's issue would) just before our Start.
type hashRacer struct {
	*reconciletest.Runtime
	st  state.Store
	got *state.TokenHash
}

func (r *hashRacer) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	c, h, err := reconcile.NewCredentials()
	if err != nil {
		return err
	}
	if err := r.st.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, s.ID, h) }); err != nil {
		return err
	}
	if err := r.Runtime.Start(ctx, s, reconcile.Launch{Identity: l.Identity, Creds: c}); err != nil {
		return err
	}
	*r.got = h
	return r.Runtime.Start(ctx, s, l)
}

// earlyRacer starts the spore with its own token right after our
// observation, so our hash is committed after the racer's.
type earlyRacer struct {
	*reconciletest.Runtime
	st  state.Store
	got *state.TokenHash
}

func (r *earlyRacer) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	o, err := r.Runtime.Observe(ctx, ids)
	if err != nil {
		return o, err
	}
	c, h, err := reconcile.NewCredentials()
	if err != nil {
		return o, err
	}
	if err := r.st.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "a", h) }); err != nil {
		return o, err
	}
	*r.got = h
	return o, r.Runtime.Start(ctx, state.Spore{Wish: state.Wish{ID: "a"}}, reconcile.Launch{Creds: c})
}

func TestPassRacingStartRestoresTheRacersHash(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	var got state.TokenHash
	ps := e.pass()
	ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) {
		return &earlyRacer{Runtime: e.rt, st: e.st, got: &got}, nil
	}
	_, err := ps.Run(context.Background(), reconcile.Options{Heal: true})
	require.NoError(t, err)
	stored := statetest.Read(t, e.st, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "a") })
	require.Equal(t, got, stored, "our unused hash must give way to the token the running spore has")
}

func TestPassListsOrphansOnWholeFleetPasses(t *testing.T) {
	e := newEnv(t, "a")
	e.rt.Set(reconcile.PodObservation{ID: "ghost", State: reconcile.PodRunning, Ready: true})
	e.rt.Set(reconcile.PodObservation{ID: "kept-home", State: reconcile.PodAbsent})
	require.Equal(t, []string{"ghost"}, e.run(reconcile.Options{}).Orphans)
	require.Equal(t, []string{"ghost"}, e.heal().Orphans)
	require.Empty(t, e.run(reconcile.Options{IDs: []string{"a"}}).Orphans, "a pass over named spores cannot tell orphans")
	require.Zero(t, e.rt.Calls("Stop")+e.rt.Calls("Delete"), "nothing removes an orphan but delete --orphan")
}

// overlappingPass plays a second pass that posts the same entry and
// commits first, between our post and our commit.
type overlappingPass struct {
	reconcile.BridgeClient
	st state.Store
}

func (o overlappingPass) Prompt(ctx context.Context, p bridge.PromptRequest) (bridge.PromptAccepted, error) {
	a, err := o.BridgeClient.Prompt(ctx, p)
	if err != nil {
		return a, err
	}
	err = o.st.Update(ctx, func(tx state.Tx) error {
		if err := tx.Dequeue(ctx, "a", p.ID); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "a", []state.Event{{Kind: state.KindLifecycle, Action: "delivered", Text: "by the other pass"}})
		return err
	})
	return a, err
}

func TestPassOverlappingDeliveryIsRecordedOnce(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.heal()
	enqueue(t, e.st, "a", "p-1", "hello")
	ps := e.pass()
	ps.Dial = func(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
		c, err := e.rt.Dial(ep)
		return overlappingPass{BridgeClient: c, st: e.st}, err
	}
	_, err := ps.Run(context.Background(), reconcile.Options{Deliver: true})
	require.NoError(t, err)
	require.Equal(t, 1, count(actions(e.events("a")), "delivered"), "two passes that both posted an entry must record one delivery")
	require.Empty(t, pending(t, e.st, "a"))
}

func TestPassReadOnlyBetweenWakeAndStartCountsNoCrash(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running) // a wake recorded its wish...
	e.run(reconcile.Options{})       // ...a status ran before the wake's pass
	require.Equal(t, policy.Dead, e.spore("a").Health)
	out := e.heal()
	require.True(t, out.Plans[0].Start)
	require.False(t, out.Plans[0].Crash, "a first start counted as a crash")
	require.Zero(t, e.spore("a").Restarts)
	require.Empty(t, e.spore("a").Failures)
}

func TestPassFailedObservationRecordsNothing(t *testing.T) {
	e := newEnv(t, "a")
	e.setDesired("a", state.Running)
	e.rt.ObserveErr = fmt.Errorf("api server blip")
	before := e.st.Updates.Load()
	out := e.heal()
	require.Error(t, out.ObserveErr)
	require.Equal(t, before, e.st.Updates.Load(), "a pass that observed nothing wrote something")
	e.rt.ObserveErr = nil
	out = e.heal()
	require.True(t, out.Plans[0].Start)
	require.False(t, out.Plans[0].Crash, "a blip made the first start a crash")
}

func TestPassInterruptedObservationIsInterrupted(t *testing.T) {
	e := newEnv(t, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.rt.ObserveErr = ctx.Err()
	_, err := e.pass().Run(ctx, reconcile.Options{})
	require.ErrorIs(t, err, context.Canceled)
}

func TestPassResetRacingAPassIsKept(t *testing.T) {
	e := newEnv(t, "a")
	ctx := context.Background()
	// Four crashes in the window, dead again: this pass would open the
	// breaker — but a person resets the spore while it runs.
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "a")
		if err != nil {
			return err
		}
		sp.Desired, sp.Health = state.Running, "Dead"
		for i := 1; i <= 4; i++ {
			sp.Failures = append(sp.Failures, e.now.Add(-time.Duration(i)*time.Minute))
		}
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
	reset := func() {
		require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, "a")
			if err != nil {
				return err
			}
			sp.BreakerOpen, sp.Failures, sp.Health, sp.HealthReason = false, nil, "", ""
			sp.Generation++
			_, err = storetest.Put(ctx, tx, sp)
			return err
		}))
	}
	ps := e.pass()
	ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) {
		return wishChanger{Runtime: e.rt, do: reset}, nil
	}
	out, err := ps.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)
	require.True(t, out.Plans[0].OpenBreaker, "the pass planned on the old record")
	sp := e.spore("a")
	require.False(t, sp.BreakerOpen, "the reset was undone by a pass that counted on the old record")
	require.Empty(t, sp.Failures)
}

// A projection that fails says so once: the views name what they were
// writing, and the pass adds nothing to it ("project views: project
// views: …" before).
func TestProjectErrorSaysItOnce(t *testing.T) {
	e := newEnv(t, "a")
	blocker := filepath.Join(t.TempDir(), "views")
	require.NoError(t, os.WriteFile(blocker, []byte("not a directory"), 0o600))
	ps := e.pass()
	ps.Project = &benchViews{d: &views.Dir{Path: blocker}}
	_, err := ps.Run(context.Background(), reconcile.Options{Project: true})
	require.Error(t, err)
	require.Equal(t, 1, strings.Count(err.Error(), "project views:"), "%v", err)
	require.Contains(t, err.Error(), blocker, "names the directory")
}
