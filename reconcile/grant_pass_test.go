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

// TestAnOverBudgetPromptDeliveredGrantsItsTurn: the pass that delivers a
// person's over-budget prompt records, with the delivery, the leave the
// model gateway gives the spore's calls for the turn it starts
// (GrantUntil); an ordinary prompt gives none.
func TestAnOverBudgetPromptDeliveredGrantsItsTurn(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
			pass := reconciletest.NewPass(t, st, reconciletest.WithFake(reconciletest.New()), reconciletest.WithClock(func() time.Time { return now }))
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				if _, err := wish.Create(ctx, tx, wish.New{ID: "a", Colony: "lab", Rank: state.RankSpore}, now); err != nil {
					return err
				}
				return wish.Wake(ctx, tx, "a", now)
			}))
			deliver := func(m outbox.Message) {
				t.Helper()
				_, err := outbox.Send(ctx, st, m, now)
				require.NoError(t, err)
				for range 2 { // the first starts it, the next delivers
					_, err = pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
					require.NoError(t, err)
				}
				require.Empty(t, pending(t, st, "a"), "delivered")
			}
			deliver(outbox.Message{To: "a", From: "user:ann", Text: "hello"})
			require.True(t, statetest.Spore(t, st, "a").GrantUntil.IsZero(), "an ordinary prompt gives no leave")

			now = now.Add(time.Minute)
			deliver(outbox.Message{To: "a", From: "user:ann", Text: "finish it anyway", OverBudget: true})
			sp := statetest.Spore(t, st, "a")
			require.True(t, policy.Grant(now).Equal(sp.GrantUntil), "got %v", sp.GrantUntil)
			require.True(t, policy.Granted(sp, now.Add(policy.GrantFor-time.Second)))
			require.False(t, policy.Granted(sp, now.Add(policy.GrantFor)))
		})
	}
}
