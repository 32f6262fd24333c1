package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// refuseID makes a's bridge answer err to the entry id, as the bridge
// client reports an HTTP answer.
func refuseID(b *reconciletest.Bridge, id string, err error) {
	b.SetRefuse(func(p bridge.PromptRequest) error {
		if p.ID == id {
			return fmt.Errorf("bridge POST /v1/prompts: %w", err)
		}
		return nil
	})
}

func deadLetters(t *testing.T, st state.Store, id string) []state.OutboxEntry {
	t.Helper()
	return statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.DeadLetters(ctx, id) })
}

func promptIDs(ps []bridge.PromptRequest) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func entryIDs(es []state.OutboxEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// TestDeadLetterQueueMovesOn: an entry the bridge refuses with 413 (as
// a prompt framed over its bound was, on every try) is made a dead
// letter with an event on the spore's log and a summons to the [arch]
// (its colony has no mycologist), and the entries behind it are
// delivered in the same pass; the next pass posts nothing again and
// summons nobody again; status says the spore has a dead letter.
func TestDeadLetterQueueMovesOn(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a")
			b := e.rt.BridgeOf("a")
			refuseID(b, "p-2", &bridge.APIError{Status: http.StatusRequestEntityTooLarge, Message: "prompt text is 493000 bytes; the limit is 262144"})
			for _, id := range []string{"p-1", "p-2", "p-3"} {
				enqueue(t, e.st, "a", id, "text of "+id)
			}
			archQueued := len(pending(t, e.st, "arch"))

			out := e.heal()
			require.Equal(t, []string{"p-1", "p-3"}, promptIDs(b.Prompts()), "the entry behind the dead letter went in the same pass")
			require.Empty(t, pending(t, e.st, "a"))
			dead := deadLetters(t, e.st, "a")
			require.Len(t, dead, 1)
			require.Equal(t, "p-2", dead[0].ID)
			require.Equal(t, "text of p-2", dead[0].Text)
			require.Contains(t, dead[0].Dead.Reason, "413")
			require.Equal(t, summonsNow, dead[0].Dead.At)
			require.Equal(t, 1, count(actions(e.events("a")), "dead-letter"))
			require.Equal(t, 2, count(actions(e.events("a")), "delivered"))

			summons := pending(t, e.st, "arch")
			require.Len(t, summons, archQueued+1, "the [arch] is summoned once")
			last := summons[len(summons)-1]
			require.Equal(t, reconcile.SummonsFrom, last.From)
			require.Contains(t, last.Text, "Dead letter: a message to spore a (entry p-2)")
			require.Contains(t, statetest.Spore(t, e.st, "arch").Incidents, state.Incident{Key: reconcile.DeadLetterKey("a", "p-2"), At: summonsNow})

			h := health(out, "a")
			require.Equal(t, 1, h.DeadLetters)
			require.Equal(t, "1 dead letter in its outbox (sporectl outbox a)", h.Reason)

			summoned := func() int {
				n := 0
				for _, ev := range e.events("arch") {
					if ev.From == reconcile.SummonsFrom {
						n++
					}
				}
				return n
			}
			require.Equal(t, 1, summoned())
			e.heal()
			require.Equal(t, []string{"p-1", "p-3"}, promptIDs(b.Prompts()), "a dead letter is not posted again")
			require.Equal(t, 1, summoned(), "nor summoned again")
			h = health(e.run(reconcile.Options{}), "a")
			require.Equal(t, 1, h.DeadLetters, "a read-only pass counts it too")
			require.Equal(t, policy.Healthy, h.Effective)
			require.Equal(t, "1 dead letter in its outbox (sporectl outbox a)", h.Reason)
		})
	}
}

// TestDeadLetterTransientStaysQueued: a refusal that is not about the
// entry (a 5xx, a busy or unauthorised bridge, something that is not a
// bridge of this version, no answer at all) leaves it at the head of the
// queue, and what is behind it waits, as before.
func TestDeadLetterTransientStaysQueued(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"503", &bridge.APIError{Status: http.StatusServiceUnavailable, Message: "cannot append"}},
		{"500", &bridge.APIError{Status: http.StatusInternalServerError, Message: "boom"}},
		{"401", &bridge.APIError{Status: http.StatusUnauthorized, Message: "wrong token"}},
		{"404", &bridge.APIError{Status: http.StatusNotFound, Message: "no route"}},
		{"409", &bridge.APIError{Status: http.StatusConflict, Message: "busy"}},
		{"429", &bridge.APIError{Status: http.StatusTooManyRequests, Message: "slow down"}},
		{"network", errors.New("dial tcp: connection refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSummonsEnv(t, "dir", false, "a")
			b := e.rt.BridgeOf("a")
			refuseID(b, "p-1", tc.err)
			enqueue(t, e.st, "a", "p-1", "one")
			enqueue(t, e.st, "a", "p-2", "two")
			archQueued := len(pending(t, e.st, "arch"))
			e.heal()
			e.heal()
			require.Empty(t, b.Prompts(), "order holds: nothing passes a transient failure")
			require.Len(t, pending(t, e.st, "a"), 2)
			require.Empty(t, deadLetters(t, e.st, "a"))
			require.Zero(t, count(actions(e.events("a")), "dead-letter"))
			require.Len(t, pending(t, e.st, "arch"), archQueued)

			b.SetRefuse(nil)
			e.heal()
			require.Equal(t, []string{"p-1", "p-2"}, promptIDs(b.Prompts()))
		})
	}
}

// TestDeadLetterReasonBounded: a bridge is the agent's, so what it says
// reaches the dead letter's reason on one line and bounded.
func TestDeadLetterReasonBounded(t *testing.T) {
	e := newSummonsEnv(t, "dir", false, "a")
	refuseID(e.rt.BridgeOf("a"), "p-1", &bridge.APIError{Status: http.StatusBadRequest, Message: "line\nbreak\x1b[31m" + strings.Repeat("é", 4000)})
	enqueue(t, e.st, "a", "p-1", "one")
	e.heal()
	dead := deadLetters(t, e.st, "a")
	require.Len(t, dead, 1)
	r := dead[0].Dead.Reason
	require.LessOrEqual(t, len(r), state.MaxDeadReason)
	require.NotContains(t, r, "\n")
	require.NotContains(t, r, "\x1b")
	require.True(t, strings.HasPrefix(r, "the bridge answered 400 Bad Request: line break"), r)
}

// failingBury is a store whose transactions fail to make a dead letter:
// the commit that would make one fails whole.
type failingBury struct{ state.Store }

func (s failingBury) Update(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.Update(ctx, func(tx state.Tx) error { return fn(buryFails{tx}) })
}

type buryFails struct{ state.Tx }

func (buryFails) Bury(context.Context, string, string, state.DeadLetter) error {
	return &state.UnavailableError{Op: "write the store", Err: errors.New("no space left on device")}
}

// TestDeadLetterStoreFailsMidway: when the store fails the commit that
// makes the dead letter, nothing of it is lost: the entry is still queued
// (never gone), no event or summons was written, and the next pass with a
// working store makes it a dead letter.
func TestDeadLetterStoreFailsMidway(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a")
			b := e.rt.BridgeOf("a")
			refuseID(b, "p-1", &bridge.APIError{Status: http.StatusRequestEntityTooLarge, Message: "too large"})
			enqueue(t, e.st, "a", "p-1", "one")
			enqueue(t, e.st, "a", "p-2", "two")
			archQueued := len(pending(t, e.st, "arch"))

			ps := e.pass()
			ps.Store = failingBury{e.st}
			_, err := ps.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
			var ue *state.UnavailableError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, []string{"p-1", "p-2"}, entryIDs(pending(t, e.st, "a")), "nothing left the queue")
			require.Empty(t, deadLetters(t, e.st, "a"))
			require.Zero(t, count(actions(e.events("a")), "dead-letter"))
			require.Len(t, pending(t, e.st, "arch"), archQueued)

			e.heal()
			require.Equal(t, []string{"p-1"}, entryIDs(deadLetters(t, e.st, "a")))
			require.Empty(t, pending(t, e.st, "a"))
			require.Equal(t, 1, count(actions(e.events("a")), "dead-letter"))
			require.Len(t, pending(t, e.st, "arch"), archQueued+1)
		})
	}
}
