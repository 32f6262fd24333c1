package wish_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func TestSetSpec(t *testing.T) {
	spec := state.Spec{Image: "img:1", CPU: "1", Memory: "1Gi", Storage: "2Gi"}
	existing := []state.Spore{
		{Wish: state.Wish{ID: "lab-red", Colony: "lab", Rank: state.RankSwarm, Swarm: "red", Spec: spec, Generation: 3}},
		{Wish: state.Wish{ID: "lab-blue", Colony: "lab", Rank: state.RankSwarm, Swarm: "blue", Spec: spec, Generation: 3}},
		{Wish: state.Wish{ID: "w", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev", Spec: spec, Generation: 3}},
	}
	bigger := spec
	bigger.CPU, bigger.Image = "2", "img:2"
	tests := []struct {
		name string
		id   string
		c    wish.Spec
		text string // the event's; "" when nothing is written
		err  string
		is   error // wrapped by err; nil for *wish.RefusedError
	}{
		{"the same again", "w", wish.Spec{Rank: state.RankSpore, Swarm: "red", Role: "dev", Spec: spec}, "", "", nil},
		{"resources and image", "w", wish.Spec{Rank: state.RankSpore, Swarm: "red", Role: "dev", Spec: bigger},
			"image img:1 → img:2, cpu 1 → 2", "", nil},
		{"another swarm and role", "w", wish.Spec{Rank: state.RankSpore, Swarm: "blue", Role: "qa", Spec: spec},
			"swarm red → blue, role dev → qa", "", nil},
		{"out of its swarm", "w", wish.Spec{Rank: state.RankSpore, Spec: spec}, "swarm red → (none), role dev → (none)", "", nil},
		{"a [swarm] mycologist into a free swarm", "lab-red", wish.Spec{Rank: state.RankSwarm, Swarm: "green", Spec: spec},
			"swarm red → green", "", nil},
		{"a rank changed", "w", wish.Spec{Rank: state.RankColony, Swarm: "red", Role: "dev", Spec: spec}, "",
			"rank: spore w has rank spore, not colony: a rank is fixed when the spore is created (delete it and create it again to change it; nothing was changed)", nil},
		{"a role without a swarm", "w", wish.Spec{Rank: state.RankSpore, Role: "dev", Spec: spec}, "",
			"role: spore w cannot have role dev without a swarm (nothing was changed)", nil},
		{"a [swarm] mycologist out of its swarm", "lab-red", wish.Spec{Rank: state.RankSwarm, Spec: spec}, "",
			"swarm: spore lab-red is a [swarm] mycologist, which orchestrates one swarm: it cannot leave its swarm (nothing was changed)", nil},
		{"a [swarm] mycologist into a swarm that has one", "lab-red", wish.Spec{Rank: state.RankSwarm, Swarm: "blue", Spec: spec}, "",
			"spore lab-blue is already the [swarm] mycologist of swarm blue in colony lab: already exists", state.ErrExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, existing...)
				before, _ := read(t, st, tt.id)
				var got state.Spore
				var wrote bool
				err := update(st, func(ctx context.Context, tx state.Tx) error {
					var err error
					got, wrote, err = wish.SetSpec(ctx, tx, tt.id, tt.c, now)
					return err
				})
				sp, evs := read(t, st, tt.id)
				if tt.err != "" {
					require.EqualError(t, err, tt.err)
					if tt.is != nil {
						require.ErrorIs(t, err, tt.is)
					} else {
						var refused *wish.RefusedError
						require.ErrorAs(t, err, &refused)
					}
					require.Equal(t, before, sp, "a refused change writes nothing")
					require.Empty(t, evs)
					return
				}
				require.NoError(t, err)
				require.Equal(t, tt.text != "", wrote)
				if tt.text == "" {
					require.Equal(t, before, sp, "the same spec again writes nothing")
					require.Empty(t, evs)
					return
				}
				require.Equal(t, sp, got, "the record returned is the one written")
				require.Equal(t, uint64(4), sp.Generation)
				require.Equal(t, now, sp.Updated)
				require.Equal(t, tt.c.Swarm, sp.Swarm)
				require.Equal(t, tt.c.Role, sp.Role)
				require.Equal(t, tt.c.Spec, sp.Spec)
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "configured", At: now, Text: tt.text}}, evs)
			})
		})
	}
}

func TestSetSpecOfAMissingSporeIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		err := update(st, func(ctx context.Context, tx state.Tx) error {
			_, _, err := wish.SetSpec(ctx, tx, "ghost", wish.Spec{Rank: state.RankSpore}, now)
			return err
		})
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}
