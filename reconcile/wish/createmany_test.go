package wish_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func TestCreateManyRecordsEachAsCreateWould(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		news := []wish.New{{ID: "a", Colony: "lab", Rank: state.RankSpore}, {ID: "b", Colony: "lab", Rank: state.RankSpore, Spec: state.Spec{CPU: "2"}}}
		var got []state.Spore
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
			var err error
			got, err = wish.CreateMany(ctx, tx, news, now)
			return err
		}))
		require.Len(t, got, 2)
		for i, n := range news {
			sp, evs := read(t, st, n.ID)
			require.Equal(t, sp, got[i], "the records returned are the ones written, in order")
			require.Equal(t, state.Paused, sp.Desired)
			require.Equal(t, n.Spec.WithDefaults(settings), sp.Spec)
			require.Len(t, evs, 1)
			require.Equal(t, "created", evs[0].Action)
		}
	})
}

// The rank rules hold among the new spores as against the stored ones,
// and a refusal anywhere leaves the transaction to commit nothing.
func TestCreateManyKeepsTheRanksAmongThem(t *testing.T) {
	tests := []struct {
		name string
		news []wish.New
		err  string // "" when all are created
		is   error
	}{
		{"two arch", []wish.New{{ID: "x", Colony: "lab", Rank: state.RankArch}, {ID: "y", Colony: "lab", Rank: state.RankArch}},
			"spore x is already the arch mycologist", state.ErrExists},
		{"two colony mycologists of one colony", []wish.New{{ID: "x", Colony: "lab", Rank: state.RankColony}, {ID: "y", Colony: "lab", Rank: state.RankColony}},
			"spore x is already colony lab's mycologist", state.ErrExists},
		{"colony mycologists of two colonies", []wish.New{{ID: "x", Colony: "lab", Rank: state.RankColony}, {ID: "y", Colony: "ops", Rank: state.RankColony}}, "", nil},
		{"an id in use after a new one", []wish.New{{ID: "x", Colony: "lab", Rank: state.RankSpore}, {ID: "old", Colony: "lab", Rank: state.RankSpore}},
			"already exists", state.ErrExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "old"}})
				err := update(st, func(ctx context.Context, tx state.Tx) error {
					_, err := wish.CreateMany(ctx, tx, tt.news, now)
					return err
				})
				var all []state.Spore
				require.NoError(t, st.View(context.Background(), func(tx state.Tx) error {
					var err error
					all, err = tx.Spores(context.Background())
					return err
				}))
				if tt.err == "" {
					require.NoError(t, err)
					require.Len(t, all, 1+len(tt.news))
					return
				}
				require.ErrorContains(t, err, tt.err)
				require.ErrorIs(t, err, tt.is)
				require.Len(t, all, 1, "a refused create of many writes none of them")
			})
		})
	}
}
