package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// A pass over named spores reads their records, heads and outboxes and
// nothing of the rest of the fleet, on both stores: what it reads
// does not grow with the fleet. A covered spore whose colony has a
// budget is the exception (the colony's sum is over all its spores),
// and so is a whole-fleet pass.
func TestANamedPassReadsOnlyItsSpores(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			base := open(t)
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			require.NoError(t, base.Update(ctx, func(tx state.Tx) error {
				news := make([]wish.New, 200)
				for i := range news {
					news[i] = wish.New{ID: fmt.Sprintf("s-%03d", i), Colony: "lab", Rank: state.RankSpore}
				}
				news[7].Colony = "paid"
				_, err := wish.CreateMany(ctx, tx, news, now)
				return err
			}))
			_, err := outbox.Send(ctx, base, outbox.Message{To: "s-042", From: "user:ann", Kind: state.KindPrompt, Text: "hello"}, now)
			var asleep *outbox.AsleepError
			require.ErrorAs(t, err, &asleep, "asleep: refused, nothing queued")
			st := &statetest.Reads{Store: base}
			rt := reconciletest.New()
			pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.At(now))

			out, err := pass.Run(ctx, reconcile.Options{IDs: []string{"s-042", "s-100", "ghost"}})
			require.NoError(t, err)
			require.Len(t, out.Spores, 2)
			require.ErrorIs(t, out.Missing, state.ErrNotFound, "a missing id is listed")
			require.Equal(t, int64(2), st.Records.Load(), "two records read of 200")
			require.Zero(t, st.Fleet.Load(), "no whole-fleet read")

			// A colony with a budget: its sum reads every record.
			require.NoError(t, base.Update(ctx, func(tx state.Tx) error {
				_, err := wish.SetColony(ctx, tx, "paid", state.ColonySettings{Budget: state.Budget{TokensPerDay: 10}})
				return err
			}))
			st.Reset()
			_, err = pass.Run(ctx, reconcile.Options{IDs: []string{"s-100"}})
			require.NoError(t, err)
			require.Equal(t, int64(1), st.Records.Load(), "s-100's colony has no budget")
			st.Reset()
			_, err = pass.Run(ctx, reconcile.Options{IDs: []string{"s-007"}})
			require.NoError(t, err)
			require.Equal(t, int64(1+200), st.Records.Load(), "s-007's colony has a budget: every record")

			st.Reset()
			_, err = pass.Run(ctx, reconcile.Options{})
			require.NoError(t, err)
			require.Equal(t, int64(200), st.Records.Load(), "a whole pass reads the fleet once")
		})
	}
}
