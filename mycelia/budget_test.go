package mycelia

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// A tell to a spore over its budget is recorded and kept in its outbox,
// and answered 409 over_budget saying why (docs/budgets.md). A spore a budget put
// to sleep takes it the same way, and stays asleep.
func TestTellToASporeOverBudgetIsQueued(t *testing.T) {
	for _, asleep := range []bool{false, true} {
		t.Run(map[bool]string{false: "awake", true: "slept by budget"}[asleep], func(t *testing.T) {
			h := newHarness(t).colony()
			ctx := context.Background()
			now := time.Now().UTC()
			require.NoError(t, h.st.Store.Update(ctx, func(tx state.Tx) error {
				if _, _, err := wish.SetBudget(ctx, tx, "lab-b", state.Budget{TokensPerDay: 20}, "user:ann", now); err != nil {
					return err
				}
				if err := wish.Wake(ctx, tx, "lab-b", now); err != nil {
					return err
				}
				if asleep {
					if _, _, err := wish.SleepBy(ctx, tx, "lab-b", state.ByBudget, ": over budget (24/20 tokens today)", now); err != nil {
						return err
					}
				}
				// 24 tokens today, as the gateway counts them.
				_, err := state.CountModelCall(ctx, tx, "lab-b", "msg_1", state.Usage{InputTokens: 14, OutputTokens: 10}, now)
				return err
			}))
			req := TellRequest{Text: "one more thing"}
			r := h.do("lab-myco", "POST", "/spores/lab-b/prompt", req)
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			var e Error
			r.decode(t, &e)
			require.Equal(t, CodeOverBudget, e.Code)
			require.Contains(t, e.Message, "over budget (24/20 tokens today)")
			require.Len(t, h.messages("lab-b"), 1, "recorded")
			out := statetest.Read(t, h.st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "lab-b") })
			require.Len(t, out, 1, "kept in the outbox")
			require.False(t, out[0].OverBudget, "a mycologist cannot mark it")
			want := state.Running
			if asleep {
				want = state.Paused
			}
			require.Equal(t, want, h.spore("lab-b").Desired)
		})
	}
}
