package mycelia

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// A tell without wake, or a swarm tell (which has no wake), wakes a
// spore that idle put to sleep when its colony wakes on a message
// (docs/sleep.md); one a person put to sleep, or one in a colony that does
// not, is refused as asleep — whoever sends it, a plain teammate included.
func TestTellWakesWhatIdlePutToSleep(t *testing.T) {
	sends := []struct {
		name string
		send func(h *harness) response
		hint string // what the refusal tells the sender to do
	}{
		{"the colony mycologist's tell", func(h *harness) response {
			return h.do("lab-myco", "POST", "/spores/lab-b/prompt", TellRequest{Text: "are you there?"})
		}, `send it again with "wake": true`},
		{"a plain teammate's swarm tell", func(h *harness) response {
			return h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "tester", Text: "your turn"})
		}, "ask your mycologist"},
		{"the swarm mycologist's swarm tell", func(h *harness) response {
			return h.do("lab-lead", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "tester", Text: "your turn"})
		}, "ask your mycologist"},
	}
	for _, send := range sends {
		t.Run(send.name, func(t *testing.T) { testWakesWhatIdlePutToSleep(t, send.send, send.hint) })
	}
}

func testWakesWhatIdlePutToSleep(t *testing.T, send func(h *harness) response, hint string) {
	for _, c := range []struct {
		name          string
		by            state.DesiredBy
		wakeOnMessage bool
		woken         bool
	}{
		{"idle, the colony wakes on a message", state.ByIdle, true, true},
		{"idle, the colony does not", state.ByIdle, false, false},
		{"a person, the colony wakes on a message", state.ByPerson, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t).colony()
			ctx := context.Background()
			require.NoError(t, h.st.Store.Update(ctx, func(tx state.Tx) error {
				if _, err := wish.SetColony(ctx, tx, "lab", state.ColonySettings{WakeOnMessage: c.wakeOnMessage}); err != nil {
					return err
				}
				if err := wish.Wake(ctx, tx, "lab-b", time.Now()); err != nil {
					return err
				}
				if c.by == state.ByIdle {
					_, _, err := wish.SleepBy(ctx, tx, "lab-b", state.ByIdle, ": idle for 1h0m0s", time.Now())
					return err
				}
				return wish.Sleep(ctx, tx, "lab-b", time.Now())
			}))
			r := send(h)
			if !c.woken {
				require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
				var e Error
				r.decode(t, &e)
				require.Equal(t, CodeAsleep, e.Code)
				require.Contains(t, e.Message, hint)
				require.Empty(t, h.messages("lab-b"))
				require.Equal(t, state.Paused, h.spore("lab-b").Desired)
				return
			}
			require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
			var res SendResponse
			r.decode(t, &res)
			require.True(t, res.Woke)
			sp := h.spore("lab-b")
			require.Equal(t, state.Running, sp.Desired)
			require.Empty(t, sp.DesiredBy)
			require.Len(t, h.messages("lab-b"), 1)
		})
	}
}
