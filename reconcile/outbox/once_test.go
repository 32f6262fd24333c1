package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

func TestSendOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a")
	m := outbox.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi"}
	events := func() []state.Event { return e.events("a") }

	_, err := outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour}, e.now)
	var asleep *outbox.AsleepError
	require.True(t, errors.As(err, &asleep), "%v", err)
	require.Empty(t, events())

	m.Wake = true
	s, err := outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour}, e.now)
	require.NoError(t, err)
	require.Equal(t, outbox.Sent{Entry: s.Entry, Pending: true, Woke: true}, s)
	require.Equal(t, "m-1", s.Entry.ID)
	evs := events()
	require.Len(t, evs, 2)
	require.Equal(t, "wake", evs[0].Action)
	require.Equal(t, state.KindMessage, evs[1].Kind)
	require.Equal(t, "m-1", evs[1].Action, "the message event names its entry")

	// Again while it waits in the outbox: nothing written.
	before := e.st.Updates.Load()
	s, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour}, e.now.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, s.Duplicate)
	require.True(t, s.Pending)
	require.False(t, s.Woke)
	require.Len(t, events(), 2)
	require.Equal(t, before+1, e.st.Updates.Load(), "one transaction, nothing in it")

	// Delivered (out of the outbox): still recognised from the log,
	// whatever the agent's lines after it (stamped by the bridge's clock,
	// long before: not the end of the window).
	e.deliver("a", "m-1")
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "a", []state.Event{
			{Kind: state.KindAgent, At: e.now.Add(-48 * time.Hour), BridgeSeq: 1, Line: json.RawMessage(`{"type":"system","subtype":"init"}`)},
			{Kind: state.KindAgent, At: e.now.Add(-48 * time.Hour), BridgeSeq: 2, Line: json.RawMessage(`{"type":"result"}`)},
		})
		return err
	}))
	n := len(events())
	s, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour}, e.now.Add(2*time.Minute))
	require.NoError(t, err)
	require.True(t, s.Duplicate)
	require.False(t, s.Pending)
	require.Len(t, events(), n)

	// Past the window it is a new message.
	s, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Minute}, e.now.Add(2*time.Hour))
	require.NoError(t, err)
	require.False(t, s.Duplicate)
	require.Len(t, events(), n+1)

	_, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{Window: time.Hour}, e.now)
	require.ErrorContains(t, err, "idempotency key is empty")
	_, err = outbox.SendOnce(ctx, e.st, outbox.Message{To: "ghost", Text: "x"}, outbox.Once{ID: "m-2"}, e.now)
	require.ErrorIs(t, err, state.ErrNotFound)

	// A stopped spore is not woken by a message that keeps it stopped.
	e.change("a", func(sp *state.Spore) { sp.Desired = state.Stopped })
	n = len(events())
	_, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-3", Window: time.Hour, KeepStopped: true}, e.now)
	var stopped *outbox.StoppedError
	require.ErrorAs(t, err, &stopped)
	require.Len(t, events(), n)
}

func TestSendOnceRateLimit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a", "b")
	m := outbox.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi", Wake: true}
	once := func(id string, at time.Time) error {
		_, err := outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: id, Window: time.Hour, Sender: "b", Limit: 2, Per: time.Minute}, at)
		return err
	}
	require.NoError(t, once("m-1", e.now))
	require.NoError(t, once("m-2", e.now.Add(20*time.Second)))
	require.NoError(t, once("m-2", e.now.Add(25*time.Second)), "a repeat is not counted")
	err := once("m-3", e.now.Add(30*time.Second))
	var rl *outbox.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 30*time.Second, rl.RetryAfter, "when m-1 leaves the window")
	require.NoError(t, once("m-3", e.now.Add(61*time.Second)))
}

// TestSendOnceThen: Then runs in the send's transaction when the entry
// is to be delivered (recorded now, or before and still queued), with the
// target's record as it stands there (woken: its new wish); not for a
// repeat already delivered, nor for an entry held for a budget; its
// error undoes the send.
func TestSendOnceThen(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a", "b")
	m := outbox.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi", Wake: true}
	var seen []state.Desired
	once := func(id string) outbox.Once {
		return outbox.Once{ID: id, Window: time.Hour, Then: func(ctx context.Context, tx state.Tx, sp state.Spore) error {
			seen = append(seen, sp.Desired)
			return nil
		}}
	}
	s, err := outbox.SendOnce(ctx, e.st, m, once("m-1"), e.now)
	require.NoError(t, err)
	require.True(t, s.Woke)
	require.Equal(t, []state.Desired{state.Running}, seen, "the woken record")
	_, err = outbox.SendOnce(ctx, e.st, m, once("m-1"), e.now)
	require.NoError(t, err)
	require.Len(t, seen, 2, "a repeat still queued is delivered too")
	e.deliver("a", "m-1")
	s, err = outbox.SendOnce(ctx, e.st, m, once("m-1"), e.now)
	require.NoError(t, err)
	require.True(t, s.Duplicate)
	require.Len(t, seen, 2, "delivered already: nothing to deliver")

	e.change("b", func(sp *state.Spore) { sp.Desired, sp.Budget = state.Running, state.Budget{TokensPerDay: 10} })
	e.change("b", func(sp *state.Spore) {
		sp.GatewayRecord, _ = sp.GatewayRecord.Count("msg_1", state.Usage{InputTokens: 20}, e.now) // the gateway's count
	})
	s, err = outbox.SendOnce(ctx, e.st, outbox.Message{To: "b", From: "spore:a", Kind: state.KindMessage, Text: "hi"}, once("m-2"), e.now)
	require.NoError(t, err)
	require.NotEmpty(t, s.Held)
	require.Len(t, seen, 2, "held for the budget: nothing to deliver")

	n := len(e.events("a"))
	o := once("m-3")
	o.Then = func(context.Context, state.Tx, state.Spore) error { return errors.New("no snapshot") }
	_, err = outbox.SendOnce(ctx, e.st, m, o, e.now)
	require.ErrorContains(t, err, "no snapshot")
	require.Len(t, e.events("a"), n, "undone")
	require.Len(t, e.pending("a"), 0)
}

// Once.Check judges the target as the send reads it, before anything
// else: its refusal refuses a new message and a repeat alike, with nothing
// written, and it is told of a target that does not exist.
func TestSendOnceChecksTheTargetFirst(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a")
	m := outbox.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi", Wake: true}
	refused := errors.New("not yours")
	var seen []string
	check := func(ok bool) func(state.Spore, bool) error {
		return func(sp state.Spore, found bool) error {
			seen = append(seen, sp.ID)
			if !found {
				seen[len(seen)-1] = "(none)"
			}
			if !ok {
				return refused
			}
			return nil
		}
	}
	_, err := outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour, Check: check(false)}, e.now)
	require.ErrorIs(t, err, refused)
	require.Empty(t, e.events("a"), "nothing written: no wake, no message")
	require.Empty(t, e.pending("a"))

	s, err := outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour, Check: check(true)}, e.now)
	require.NoError(t, err)
	require.True(t, s.Woke)
	_, err = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: "m-1", Window: time.Hour, Check: check(false)}, e.now)
	require.ErrorIs(t, err, refused, "a repeat is refused too")

	_, err = outbox.SendOnce(ctx, e.st, outbox.Message{To: "ghost", Text: "x"}, outbox.Once{ID: "m-2", Check: check(true)}, e.now)
	require.ErrorIs(t, err, state.ErrNotFound, "passed over, a target not found is ErrNotFound")
	_, err = outbox.SendOnce(ctx, e.st, outbox.Message{To: "ghost", Text: "x"}, outbox.Once{ID: "m-2", Check: check(false)}, e.now)
	require.ErrorIs(t, err, refused)
	require.Equal(t, []string{"a", "a", "a", "(none)", "(none)"}, seen)
}
