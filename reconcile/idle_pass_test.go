package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// newIdleEnv is an env over st with spore a in colony lab, awake,
// sleeping after 30m idle.
func newIdleEnv(t *testing.T, st state.Store, colony state.ColonySettings) *env {
	e := newEnvOn(t, st)
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		if _, err := wish.SetColony(ctx, tx, "lab", colony); err != nil {
			return err
		}
		if _, err := wish.Create(ctx, tx, wish.New{ID: "a", Colony: "lab", Rank: state.RankSpore, SleepAfter: 30 * time.Minute}, e.now); err != nil {
			return err
		}
		return wish.Wake(ctx, tx, "a", e.now)
	}))
	return e
}

func lifecycle(evs []state.Event) []state.Event {
	var out []state.Event
	for _, ev := range evs {
		if ev.Kind == state.KindLifecycle {
			out = append(out, ev)
		}
	}
	return out
}

func TestPassPutsAnIdleSporeToSleepAndAMessageWakesIt(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newIdleEnv(t, open(t), state.ColonySettings{WakeOnMessage: true})
			e.heal() // starts it
			require.Equal(t, 1, e.rt.Calls("Start"))

			e.now = e.now.Add(20 * time.Minute)
			e.rt.BridgeOf("a").Write(passText)
			e.heal()
			require.True(t, e.spore("a").ActiveAt.Equal(e.now), "ingesting lines records the spore active")

			e.now = e.now.Add(29 * time.Minute)
			e.heal()
			require.Equal(t, state.Running, e.spore("a").Desired, "idle 29m of 30m: awake")
			require.Zero(t, e.rt.Calls("Stop"))

			e.now = e.now.Add(time.Minute)
			genBefore := e.spore("a").Generation
			out := e.heal()
			sp := e.spore("a")
			require.Equal(t, state.Paused, sp.Desired)
			require.Equal(t, state.ByIdle, sp.DesiredBy)
			require.Equal(t, genBefore+1, sp.Generation)
			require.Equal(t, 1, e.rt.Calls("Stop"))
			require.NotContains(t, e.rt.IDs(), "a", "its pod is freed")
			require.Equal(t, policy.Paused, sp.Health)
			evs := lifecycle(statetest.Events(t, e.st, "a"))
			sleep, stop := evs[len(evs)-2], evs[len(evs)-1]
			require.Equal(t, "sleep", sleep.Action)
			require.Equal(t, wish.IdleFrom, sleep.From)
			require.Equal(t, "desired Running → Paused: idle for 30m0s", sleep.Text)
			require.Equal(t, "stop", stop.Action)
			require.Equal(t, "ended its processes (asleep: idle for 30m0s)", stop.Text)
			require.Equal(t, "idle", health(out, "a").SleptBy)

			// The next pass has nothing to do: it sleeps as wished.
			e.now = e.now.Add(time.Hour)
			h := health(e.heal(), "a")
			require.Equal(t, "idle", h.SleptBy)
			require.Equal(t, "asleep: idle for 30m0s", h.Reason)
			require.Equal(t, 1, e.rt.Calls("Stop"))
			require.Equal(t, state.Paused, e.spore("a").Desired)

			// A message without --wake wakes what idle put to sleep.
			entry, err := outbox.Send(context.Background(), e.st, outbox.Message{To: "a", From: "user:ann", Text: "hello again"}, e.now)
			require.NoError(t, err)
			require.True(t, entry.Wake, "the entry says it woke its target")
			sp = e.spore("a")
			require.Equal(t, state.Running, sp.Desired)
			require.Equal(t, state.ByPerson, sp.DesiredBy)
			d, err := e.pass().Deliver(context.Background(), entry, true, 10*time.Second)
			require.NoError(t, err)
			require.Equal(t, "delivered", d.State)
			require.Equal(t, 2, e.rt.Calls("Start"))
			prompts := e.rt.BridgeOf("a").Prompts()
			require.Equal(t, entry.ID, prompts[len(prompts)-1].ID)

			// Woken and given work: idle time starts over.
			e.now = e.now.Add(29 * time.Minute)
			e.heal()
			require.Equal(t, state.Running, e.spore("a").Desired)
		})
	}
}

func TestAMessageDoesNotWakeWhatAPersonPutToSleep(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newIdleEnv(t, open(t), state.ColonySettings{WakeOnMessage: true})
			e.heal()
			ctx := context.Background()
			require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error { return wish.Sleep(ctx, tx, "a", e.now) }))
			_, err := outbox.Send(ctx, e.st, outbox.Message{To: "a", From: "user:ann", Text: "hi"}, e.now)
			var asleep *outbox.AsleepError
			require.ErrorAs(t, err, &asleep)
			require.Equal(t, state.Paused, e.spore("a").Desired)
			require.NoError(t, e.st.View(ctx, func(tx state.Tx) error {
				q, err := tx.Outbox(ctx, "a")
				require.Empty(t, q, "nothing was queued")
				return err
			}))
			e.heal() // stops it
			out := e.heal()
			require.Equal(t, "person", health(out, "a").SleptBy)
			require.Equal(t, "asleep: by a person", health(out, "a").Reason)
		})
	}
}

func TestAMessageDoesNotWakeAnIdleSporeWithoutWakeOnMessage(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			e := newIdleEnv(t, open(t), state.ColonySettings{})
			e.heal()
			e.now = e.now.Add(31 * time.Minute)
			e.heal()
			require.Equal(t, state.ByIdle, e.spore("a").DesiredBy)
			ctx := context.Background()
			_, err := outbox.Send(ctx, e.st, outbox.Message{To: "a", From: "user:ann", Text: "hi"}, e.now)
			var asleep *outbox.AsleepError
			require.ErrorAs(t, err, &asleep)
			entry, err := outbox.Send(ctx, e.st, outbox.Message{To: "a", From: "user:ann", Text: "hi", Wake: true}, e.now)
			require.NoError(t, err, "--wake still wakes it")
			require.True(t, entry.Wake)
			require.Equal(t, state.Running, e.spore("a").Desired)
		})
	}
}

// A person who acts between the plan and the idle sleep's transaction
// wins: the spore whose generation moved is neither slept nor stopped.
func TestIdleSleepLeavesASporeAPersonChanged(t *testing.T) {
	e := newIdleEnv(t, statetest.Dir(t, state.Settings{Runtime: "local"}), state.ColonySettings{})
	e.heal()
	e.now = e.now.Add(31 * time.Minute)
	ctx := context.Background()
	// A person sets a new sleep-after while the pass observes: the
	// generation moves after the snapshot the plan decided on.
	e.runtime = observeHook{Runtime: e.rt, hook: func() {
		require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
			_, _, err := wish.SetSleepAfter(ctx, tx, "a", 2*time.Hour, "user:ann", e.now)
			return err
		}))
	}}
	out := e.heal()
	require.False(t, out.Plans[0].SleepIdle, "the plan's sleep is dropped")
	sp := e.spore("a")
	require.Equal(t, state.Running, sp.Desired)
	require.Empty(t, sp.DesiredBy)
	require.Equal(t, state.Duration(2*time.Hour), sp.SleepAfter)
	require.Zero(t, e.rt.Calls("Stop"))
}

// observeHook runs hook before each observation.
type observeHook struct {
	*reconciletest.Runtime
	hook func()
}

func (o observeHook) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	o.hook()
	return o.Runtime.Observe(ctx, ids)
}
