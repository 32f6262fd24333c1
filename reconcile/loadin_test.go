package reconcile_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestLoadInIsLoadOfOne: the snapshot serve's delivery reads in the
// send's transaction, on the record the send read, is the one Load reads
// of that spore by name, on both stores, its colony with a budget (every
// record read for the colony's sum) or not; and a delivery from it reads
// the record once, in its commit.
func TestLoadInIsLoadOfOne(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			for _, budget := range []bool{false, true} {
				ctx := context.Background()
				e := newEnvOn(t, open(t), "a", "b")
				e.setDesired("a", state.Running)
				if budget {
					require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
						_, err := wish.SetColony(ctx, tx, "lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 1000}})
						return err
					}))
				}
				enqueue(t, e.st, "a", "p-1", "first")
				var in *reconcile.Snapshot
				sent, err := outbox.SendOnce(ctx, e.st, outbox.Message{To: "a", From: "spore:b", Kind: state.KindMessage, Text: "hi"},
					outbox.Once{ID: "m-1", Then: func(ctx context.Context, tx state.Tx, sp state.Spore) (err error) {
						in, err = reconcile.LoadIn(ctx, tx, sp)
						return err
					}}, e.now)
				require.NoError(t, err)
				require.NotNil(t, in, "read in the send's transaction")
				loaded, err := reconcile.Load(ctx, e.st, []string{"a"})
				require.NoError(t, err)
				if d := cmp.Diff(loaded, in); d != "" {
					t.Fatalf("budget %v: LoadIn differs from Load (-Load +LoadIn):\n%s", budget, d)
				}

				require.NoError(t, e.rt.Start(ctx, state.Spore{Wish: state.Wish{ID: "a"}}, reconcile.Launch{Creds: reconcile.Credentials{}}))
				reads := &statetest.Reads{Store: e.st}
				pass := e.pass()
				pass.Store = reads
				d, err := pass.DeliverFrom(ctx, in, sent.Entry, false, 0)
				require.NoError(t, err)
				require.Equal(t, "delivered", d.State)
				require.Equal(t, 1, reads.RecordReads("a"), "the commit's fresh read alone")
				require.Zero(t, reads.Views.Load(), "no snapshot of its own")
			}
		})
	}
}
