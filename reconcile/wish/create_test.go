package wish_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func TestCreateRecordsASleepingSporeWithTheStoresDefaults(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		var got state.Spore
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
			var err error
			got, err = wish.Create(ctx, tx, wish.New{ID: "a", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev",
				Spec: state.Spec{CPU: "2"}}, now)
			return err
		}))
		sp, evs := read(t, st, "a")
		require.Equal(t, sp, got, "the record returned is the one written")
		require.Equal(t, state.Spore{
			Wish:   state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev", Desired: state.Paused, Spec: state.Spec{Image: "img:1", CPU: "2", Memory: "1Gi", Storage: "2Gi"}, Created: now, Updated: now},
			Status: state.Status{HealthRecord: state.HealthRecord{Health: policy.Paused}},
		}, sp)
		require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "created", At: now,
			Text: "colony lab, rank spore, desired Paused"}}, evs)
	})
}

func TestCreateKeepsTheRanksThatMustBeSingle(t *testing.T) {
	existing := []state.Spore{
		{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch}},
		{Wish: state.Wish{ID: "lab-myco", Colony: "lab", Rank: state.RankColony}},
		{Wish: state.Wish{ID: "lab-red", Colony: "lab", Rank: state.RankSwarm, Swarm: "red"}},
	}
	tests := []struct {
		name string
		n    wish.New
		err  string // "" when it is created
		is   error  // the error it wraps; nil for *wish.RefusedError
	}{
		{"a second arch", wish.New{ID: "x", Colony: "ops", Rank: state.RankArch},
			"spore arch is already the arch mycologist; there is one per store: already exists", state.ErrExists},
		{"a second colony mycologist", wish.New{ID: "x", Colony: "lab", Rank: state.RankColony},
			"spore lab-myco is already colony lab's mycologist: already exists", state.ErrExists},
		{"another colony's mycologist", wish.New{ID: "x", Colony: "ops", Rank: state.RankColony}, "", nil},
		{"a second [swarm] mycologist", wish.New{ID: "x", Colony: "lab", Rank: state.RankSwarm, Swarm: "red"},
			"spore lab-red is already the [swarm] mycologist of swarm red in colony lab: already exists", state.ErrExists},
		{"another swarm's", wish.New{ID: "x", Colony: "lab", Rank: state.RankSwarm, Swarm: "blue"}, "", nil},
		{"the same swarm name in another colony", wish.New{ID: "x", Colony: "ops", Rank: state.RankSwarm, Swarm: "red"}, "", nil},
		{"a [swarm] mycologist without a swarm", wish.New{ID: "x", Colony: "lab", Rank: state.RankSwarm},
			"--rank swarm needs --swarm: a [swarm] mycologist orchestrates one swarm", nil},
		{"a spore of a swarm", wish.New{ID: "x", Colony: "lab", Rank: state.RankSpore, Swarm: "red"}, "", nil},
		{"an id in use", wish.New{ID: "lab-red", Colony: "lab", Rank: state.RankSpore}, "already exists", state.ErrExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, existing...)
				err := update(st, func(ctx context.Context, tx state.Tx) error {
					_, err := wish.Create(ctx, tx, tt.n, now)
					return err
				})
				if tt.err == "" {
					require.NoError(t, err)
					sp, _ := read(t, st, tt.n.ID)
					require.Equal(t, tt.n.Rank, sp.Rank)
					return
				}
				require.ErrorContains(t, err, tt.err)
				if tt.is != nil {
					require.ErrorIs(t, err, tt.is)
				} else {
					var refused *wish.RefusedError
					require.ErrorAs(t, err, &refused)
				}
				if tt.n.ID == "x" {
					require.ErrorIs(t, st.View(context.Background(), func(tx state.Tx) error {
						_, err := tx.Spore(context.Background(), "x")
						return err
					}), state.ErrNotFound, "a refused create writes nothing")
				}
			})
		})
	}
}

func TestDeleteRemovesTheSporeWithItsLogOutboxAndToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		ctx := context.Background()
		put(t, st, state.Spore{Wish: state.Wish{ID: "a"}}, state.Spore{Wish: state.Wish{ID: "b"}})
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
			if err := wish.Wake(ctx, tx, "a", now); err != nil {
				return err
			}
			if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "p-1", Spore: "a", From: "user:x", Text: "hi", At: now}); err != nil {
				return err
			}
			return tx.SetTokenHash(ctx, "a", state.HashToken("spt_a"))
		}))
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error { return wish.Delete(ctx, tx, "a") }))
		require.NoError(t, st.View(ctx, func(tx state.Tx) error {
			_, err := tx.Spore(ctx, "a")
			require.ErrorIs(t, err, state.ErrNotFound)
			_, err = tx.TokenHash(ctx, "a")
			require.ErrorIs(t, err, state.ErrNotFound)
			all, err := tx.Spores(ctx)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.Equal(t, "b", all[0].ID)
			return nil
		}))
		err := update(st, func(ctx context.Context, tx state.Tx) error { return wish.Delete(ctx, tx, "a") })
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}
