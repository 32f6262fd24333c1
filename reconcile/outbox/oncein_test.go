package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestSendOnceInSeesTheSendsBeforeIt: several sends recorded in one
// Update (serve's group commit) are judged as if each had its own
// transaction, in order: a repeat of an id recorded earlier in it is a
// pending duplicate, written once; the rate limit counts the sends before
// it in the transaction; the events and entries are all there after the
// one commit, and none of a transaction rolled back. On both stores.
func TestSendOnceInSeesTheSendsBeforeIt(t *testing.T) {
	stores := map[string]func(t *testing.T) state.Store{
		"dir": func(t *testing.T) state.Store { return statetest.Dir(t, state.Settings{Runtime: "local"}) },
		"postgres": func(t *testing.T) state.Store {
			st, _ := statetest.Postgres(t, state.Settings{Runtime: "local"})
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			for _, id := range []string{"a", "b", "s"} {
				statetest.Create(t, st, state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}})
			}
			send := func(tx state.Tx, to, id string, limit int) (outbox.Sent, error) {
				m := outbox.Message{To: to, From: "spore:s", Kind: state.KindMessage, Text: "hi " + to}
				return outbox.SendOnceIn(ctx, tx, m, outbox.Once{ID: id, Window: time.Hour, Sender: "s", Limit: limit, Per: time.Minute}, now)
			}
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				require.NoError(t, tx.LockSpores(ctx, []string{"b", "s", "a"}))
				first, err := send(tx, "a", "m-1", 3)
				require.NoError(t, err)
				require.False(t, first.Duplicate)
				again, err := send(tx, "a", "m-1", 3)
				require.NoError(t, err)
				require.True(t, again.Duplicate && again.Pending, "a repeat within the transaction: %+v", again)
				second, err := send(tx, "b", "m-2", 3)
				require.NoError(t, err)
				require.False(t, second.Duplicate)
				return nil
			}))
			// Two sent: the third in a minute goes, the fourth, counted
			// with the third in the same transaction, is refused, and its
			// error rolls the third back with it.
			err := st.Update(ctx, func(tx state.Tx) error {
				if _, err := send(tx, "a", "m-3", 3); err != nil {
					return err
				}
				_, err := send(tx, "b", "m-4", 3)
				return err
			})
			var rl *outbox.RateLimitError
			require.ErrorAs(t, err, &rl)
			for to, want := range map[string]string{"a": "m-1", "b": "m-2"} {
				var got []string
				for _, ev := range statetest.Events(t, st, to) {
					if ev.Kind == state.KindMessage {
						got = append(got, ev.Action)
					}
				}
				require.Equal(t, []string{want}, got, "the messages in the log of %s", to)
				q := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, to) })
				require.Len(t, q, 1, "the outbox of %s", to)
				require.Equal(t, want, q[0].ID)
			}
			sent := 0
			for _, ev := range statetest.Events(t, st, "s") {
				if ev.Kind == state.KindLifecycle && ev.Action == "sent" {
					sent++
				}
			}
			require.Equal(t, 2, sent, "the sender charged once per message recorded")
		})
	}
}
