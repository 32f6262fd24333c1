package wish_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func TestSetRecordsTheWishWithANewGenerationAndAnEvent(t *testing.T) {
	tests := []struct {
		name   string
		rank   state.Rank
		from   state.Desired
		set    func(ctx context.Context, tx state.Tx, id string) error
		want   state.Desired
		action string // "" when nothing is written
		text   string
		err    string
	}{
		{"wake", state.RankSpore, state.Paused, wake, state.Running, "wake", "desired Paused → Running", ""},
		{"wake a stopped spore", state.RankSpore, state.Stopped, wake, state.Running, "wake", "desired Stopped → Running", ""},
		{"sleep", state.RankSpore, state.Running, sleep, state.Paused, "sleep", "desired Running → Paused", ""},
		{"stop", state.RankSpore, state.Paused, stop, state.Stopped, "stop", "desired Paused → Stopped", ""},
		{"wake an awake spore", state.RankSpore, state.Running, wake, state.Running, "", "", ""},
		{"sleep a sleeping spore", state.RankSpore, state.Paused, sleep, state.Paused, "", "", ""},
		{"wake the [arch]", state.RankArch, state.Paused, wake, state.Running, "wake", "desired Paused → Running", ""},
		{"sleep the [arch]", state.RankArch, state.Running, sleep, state.Running, "", "",
			"sleep a: spore a is the [arch] mycologist, which is always on: it cannot be put to sleep or stopped (nothing was changed)"},
		{"stop the [arch]", state.RankArch, state.Running, stop, state.Running, "", "",
			"stop a: spore a is the [arch] mycologist, which is always on: it cannot be put to sleep or stopped (nothing was changed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Rank: tt.rank, Desired: tt.from, Generation: 4}})
				before, _ := read(t, st, "a")
				err := update(st, func(ctx context.Context, tx state.Tx) error { return tt.set(ctx, tx, "a") })
				sp, evs := read(t, st, "a")
				if tt.err != "" {
					var refused *wish.RefusedError
					require.ErrorAs(t, err, &refused)
					require.EqualError(t, err, tt.err)
					require.Equal(t, before, sp, "a refused wish writes nothing")
					require.Empty(t, evs)
					return
				}
				require.NoError(t, err)
				require.Equal(t, tt.want, sp.Desired)
				if tt.action == "" {
					require.Equal(t, before, sp, "the same wish again writes nothing")
					require.Empty(t, evs)
					return
				}
				require.Equal(t, uint64(5), sp.Generation)
				require.Equal(t, now, sp.Updated)
				require.Len(t, evs, 1)
				require.Equal(t, state.Event{Seq: 1, Kind: state.KindLifecycle, Action: tt.action, At: now, Text: tt.text}, evs[0])
			})
		})
	}
}

func wake(ctx context.Context, tx state.Tx, id string) error  { return wish.Wake(ctx, tx, id, now) }
func sleep(ctx context.Context, tx state.Tx, id string) error { return wish.Sleep(ctx, tx, id, now) }
func stop(ctx context.Context, tx state.Tx, id string) error  { return wish.Stop(ctx, tx, id, now) }

func TestSetOfAMissingSporeIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		for _, d := range []state.Desired{state.Running, state.Paused, state.Stopped} {
			err := update(st, func(ctx context.Context, tx state.Tx) error { return wish.Set(ctx, tx, "ghost", d, now) })
			require.ErrorIs(t, err, state.ErrNotFound, "desired %s", d)
		}
		err := update(st, func(ctx context.Context, tx state.Tx) error { return wish.Set(ctx, tx, "ghost", "Sideways", now) })
		require.ErrorContains(t, err, `record desired "Sideways" for ghost: not a desired state`)
	})
}

func TestWakeToDeliver(t *testing.T) {
	tests := []struct {
		name string
		from state.Desired
		woke bool
		text string
	}{
		{"asleep", state.Paused, true, "desired Paused → Running, to deliver p-1"},
		{"stopped", state.Stopped, true, "desired Stopped → Running, to deliver p-1"},
		{"awake", state.Running, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Desired: tt.from, Generation: 1}})
				var woke bool
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
					sp, err := tx.Spore(ctx, "a")
					if err != nil {
						return err
					}
					woke, err = wish.WakeToDeliver(ctx, tx, sp, "p-1", now)
					return err
				}))
				sp, evs := read(t, st, "a")
				require.Equal(t, tt.woke, woke)
				require.Equal(t, state.Running, sp.Desired)
				if !tt.woke {
					require.Equal(t, uint64(1), sp.Generation)
					require.Empty(t, evs)
					return
				}
				require.Equal(t, uint64(2), sp.Generation)
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "wake", At: now, Text: tt.text}}, evs)
			})
		})
	}
}

func TestKeepArchOn(t *testing.T) {
	tests := []struct {
		name string
		rank state.Rank
		from state.Desired
		want state.Desired
		text string // "" when the rule holds already
	}{
		{"an [arch] asleep", state.RankArch, state.Paused, state.Running, "desired Paused → Running: the [arch] mycologist is always on"},
		{"an [arch] stopped", state.RankArch, state.Stopped, state.Running, "desired Stopped → Running: the [arch] mycologist is always on"},
		{"an [arch] awake", state.RankArch, state.Running, state.Running, ""},
		{"a colony mycologist asleep", state.RankColony, state.Paused, state.Paused, ""},
		{"a spore asleep", state.RankSpore, state.Paused, state.Paused, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Rank: tt.rank, Desired: tt.from, Generation: 2}})
				var got state.Spore
				var seq uint64
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
					sp, err := tx.Spore(ctx, "a")
					if err != nil {
						return err
					}
					require.Equal(t, tt.text != "", wish.ArchAsleep(sp))
					got, seq, err = wish.KeepArchOn(ctx, tx, sp, now)
					return err
				}))
				sp, evs := read(t, st, "a")
				require.Equal(t, sp, got, "the record returned is the one written")
				require.Equal(t, tt.want, sp.Desired)
				if tt.text == "" {
					require.Equal(t, uint64(2), sp.Generation)
					require.Zero(t, seq)
					require.Empty(t, evs)
					return
				}
				require.Equal(t, uint64(3), sp.Generation)
				require.Equal(t, uint64(1), seq)
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "wake", From: wish.ArchFrom, At: now, Text: tt.text}}, evs)
			})
		})
	}
}
