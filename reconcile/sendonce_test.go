package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

func TestSendOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a")
	m := reconcile.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi"}
	events := func() []state.Event {
		evs := statetest.Read(t, e.st, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "a", 0, 0) })
		return evs
	}

	_, err := reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-1", Window: time.Hour}, e.now)
	var asleep *reconcile.AsleepError
	require.True(t, errors.As(err, &asleep), "%v", err)
	require.Empty(t, events())

	m.Wake = true
	s, err := reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-1", Window: time.Hour}, e.now)
	require.NoError(t, err)
	require.Equal(t, reconcile.Sent{Entry: s.Entry, Pending: true, Woke: true}, s)
	require.Equal(t, "m-1", s.Entry.ID)
	evs := events()
	require.Len(t, evs, 2)
	require.Equal(t, "wake", evs[0].Action)
	require.Equal(t, state.KindMessage, evs[1].Kind)
	require.Equal(t, "m-1", evs[1].Action, "the message event names its entry")

	// Again while it waits in the outbox: nothing written.
	before := e.st.Updates.Load()
	s, err = reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-1", Window: time.Hour}, e.now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, s.Duplicate)
	require.True(t, s.Pending)
	require.False(t, s.Woke)
	require.Len(t, events(), 2)
	require.Equal(t, before+1, e.st.Updates.Load(), "one transaction, nothing in it")

	// Delivered (out of the outbox): still recognised from the log.
	require.NoError(t, e.rt.Start(ctx, state.Spore{Wish: state.Wish{ID: "a"}}, reconcile.Launch{Creds: reconcile.Credentials{}}))
	// Lines stamped by the bridge's clock, long before: not the end of
	// the window.
	e.rt.BridgeOf("a").Write(`{"type":"system","subtype":"init"}`, `{"type":"result"}`)
	_, err = e.pass().Run(ctx, reconcile.Options{IDs: []string{"a"}, Deliver: true})
	require.NoError(t, err)
	require.Len(t, e.rt.BridgeOf("a").Prompts(), 1)
	n := len(events())
	s, err = reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-1", Window: time.Hour}, e.now.Add(2*time.Minute))
	require.NoError(t, err)
	require.True(t, s.Duplicate)
	require.False(t, s.Pending)
	require.Len(t, events(), n)

	// Past the window it is a new message.
	s, err = reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-1", Window: time.Minute}, e.now.Add(2*time.Hour))
	require.NoError(t, err)
	require.False(t, s.Duplicate)
	require.Len(t, events(), n+1)

	_, err = reconcile.SendOnce(ctx, e.st, m, reconcile.Once{Window: time.Hour}, e.now)
	require.ErrorContains(t, err, "idempotency key is empty")
	_, err = reconcile.SendOnce(ctx, e.st, reconcile.Message{To: "ghost", Text: "x"}, reconcile.Once{ID: "m-2"}, e.now)
	require.ErrorIs(t, err, state.ErrNotFound)

	// A stopped spore is not woken by a message that keeps it stopped.
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "a")
		if err != nil {
			return err
		}
		sp.Desired = state.Stopped
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}))
	n = len(events())
	_, err = reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: "m-3", Window: time.Hour, KeepStopped: true}, e.now)
	var stopped *reconcile.StoppedError
	require.ErrorAs(t, err, &stopped)
	require.Len(t, events(), n)
}

func TestSendOnceRateLimit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a", "b")
	m := reconcile.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi", Wake: true}
	once := func(id string, at time.Time) error {
		_, err := reconcile.SendOnce(ctx, e.st, m, reconcile.Once{ID: id, Window: time.Hour, Sender: "b", Limit: 2, Per: time.Minute}, at)
		return err
	}
	require.NoError(t, once("m-1", e.now))
	require.NoError(t, once("m-2", e.now.Add(20*time.Second)))
	require.NoError(t, once("m-2", e.now.Add(25*time.Second)), "a repeat is not counted")
	err := once("m-3", e.now.Add(30*time.Second))
	var rl *reconcile.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 30*time.Second, rl.RetryAfter, "when m-1 leaves the window")
	require.NoError(t, once("m-3", e.now.Add(61*time.Second)))
}
