package wish_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func TestSleepByIdle(t *testing.T) {
	tests := []struct {
		name  string
		rank  state.Rank
		from  state.Desired
		slept bool
	}{
		{"awake", state.RankSpore, state.Running, true},
		{"asleep already (a person came first)", state.RankSpore, state.Paused, false},
		{"stopped", state.RankSpore, state.Stopped, false},
		{"the [arch]", state.RankArch, state.Running, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Rank: tt.rank, Desired: tt.from, Generation: 3}})
				before, _ := read(t, st, "a")
				var slept bool
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) (err error) {
					_, slept, err = wish.SleepBy(ctx, tx, "a", state.ByIdle, ": idle for 30m0s", now)
					return err
				}))
				sp, evs := read(t, st, "a")
				require.Equal(t, tt.slept, slept)
				if !tt.slept {
					require.Equal(t, before, sp, "nothing written")
					require.Empty(t, evs)
					return
				}
				require.Equal(t, state.Paused, sp.Desired)
				require.Equal(t, state.ByIdle, sp.DesiredBy)
				require.Equal(t, uint64(4), sp.Generation)
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "sleep", From: wish.IdleFrom, At: now,
					Text: "desired Running → Paused: idle for 30m0s"}}, evs)
			})
		})
	}
}

func TestSleepByRefusesAPerson(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		put(t, st, state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running, Generation: 1}})
		for _, by := range []state.DesiredBy{state.ByPerson, "cron"} {
			err := update(st, func(ctx context.Context, tx state.Tx) error {
				_, _, err := wish.SleepBy(ctx, tx, "a", by, "", now)
				return err
			})
			require.ErrorContains(t, err, "not a rule's name", "%q", by)
		}
		sp, _ := read(t, st, "a")
		require.Equal(t, state.Running, sp.Desired)
	})
}

// A person's transition of a spore idle put to sleep makes it theirs:
// DesiredBy is cleared, with a new generation, even when the desired
// state stays the same (a person's sleep of an idle-slept spore).
func TestAPersonsWishClearsDesiredBy(t *testing.T) {
	tests := []struct {
		name   string
		set    func(ctx context.Context, tx state.Tx, id string) error
		want   state.Desired
		action string
	}{
		{"sleep", sleep, state.Paused, "sleep"},
		{"wake", wake, state.Running, "wake"},
		{"stop", stop, state.Stopped, "stop"},
		{"wake to deliver", func(ctx context.Context, tx state.Tx, id string) error {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			_, err = wish.WakeToDeliver(ctx, tx, sp, "p-1", now)
			return err
		}, state.Running, "wake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Desired: state.Paused, DesiredBy: state.ByIdle, Generation: 2}})
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error { return tt.set(ctx, tx, "a") }))
				sp, evs := read(t, st, "a")
				require.Equal(t, tt.want, sp.Desired)
				require.Equal(t, state.ByPerson, sp.DesiredBy)
				require.Equal(t, uint64(3), sp.Generation)
				require.Len(t, evs, 1)
				require.Equal(t, tt.action, evs[0].Action)
			})
		})
	}
}

func TestSetSleepAfter(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		put(t, st, state.Spore{Wish: state.Wish{ID: "a", Generation: 1}}, state.Spore{Wish: state.Wish{ID: "arch", Rank: state.RankArch, Desired: state.Running, Generation: 1}})
		set := func(id string, d time.Duration) (bool, error) {
			var wrote bool
			err := update(st, func(ctx context.Context, tx state.Tx) (err error) {
				_, wrote, err = wish.SetSleepAfter(ctx, tx, id, d, "user:ann", now)
				return err
			})
			return wrote, err
		}
		wrote, err := set("a", 30*time.Minute)
		require.NoError(t, err)
		require.True(t, wrote)
		sp, evs := read(t, st, "a")
		require.Equal(t, state.Duration(30*time.Minute), sp.SleepAfter)
		require.Equal(t, uint64(2), sp.Generation)
		require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "sleep-after", From: "user:ann", At: now, Text: "sleeps after 30m0s idle"}}, evs)

		wrote, err = set("a", 30*time.Minute)
		require.NoError(t, err)
		require.False(t, wrote, "the same value writes nothing")

		for _, bad := range []time.Duration{time.Second, 31 * 24 * time.Hour, -time.Minute} {
			_, err := set("a", bad)
			var inv *state.InvalidError
			require.ErrorAs(t, err, &inv, "%s", bad)
			require.Equal(t, "sleep after", inv.Field)
		}
		_, err = set("arch", time.Hour)
		var refused *wish.RefusedError
		require.ErrorAs(t, err, &refused)
		require.ErrorContains(t, err, "always on")
		_, err = set("ghost", time.Hour)
		require.ErrorIs(t, err, state.ErrNotFound)

		wrote, err = set("a", 0)
		require.NoError(t, err)
		require.True(t, wrote)
		sp, _ = read(t, st, "a")
		require.Zero(t, sp.SleepAfter)
		require.Equal(t, uint64(3), sp.Generation)
	})
}

func TestCreateRefusesSleepAfterOnTheArch(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		err := update(st, func(ctx context.Context, tx state.Tx) error {
			_, err := wish.Create(ctx, tx, wish.New{ID: "arch", Colony: "lab", Rank: state.RankArch, SleepAfter: time.Hour}, now)
			return err
		})
		var refused *wish.RefusedError
		require.ErrorAs(t, err, &refused)
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
			_, err := wish.Create(ctx, tx, wish.New{ID: "a", Colony: "lab", Rank: state.RankSpore, SleepAfter: time.Hour}, now)
			return err
		}))
		sp, _ := read(t, st, "a")
		require.Equal(t, state.Duration(time.Hour), sp.SleepAfter)
	})
}

func TestSetColony(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		set := func(name string, c state.ColonySettings) (bool, error) {
			var wrote bool
			err := update(st, func(ctx context.Context, tx state.Tx) (err error) {
				wrote, err = wish.SetColony(ctx, tx, name, c)
				return err
			})
			return wrote, err
		}
		get := func() state.Settings {
			var s state.Settings
			require.NoError(t, st.View(context.Background(), func(tx state.Tx) (err error) { s, err = tx.Settings(context.Background()); return err }))
			return s
		}
		lab := state.ColonySettings{SleepAfter: state.Duration(time.Hour), WakeOnMessage: true}
		wrote, err := set("lab", lab)
		require.NoError(t, err)
		require.True(t, wrote)
		require.Equal(t, lab, get().Colony("lab"))
		require.Equal(t, settings.Image, get().Image, "the rest of the settings is kept")
		wrote, err = set("lab", lab)
		require.NoError(t, err)
		require.False(t, wrote)
		_, err = set("lab", state.ColonySettings{SleepAfter: state.Duration(time.Second)})
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv)
		require.Equal(t, "colonies.lab.sleep_after", inv.Field)
		_, err = set("No Such", lab)
		require.ErrorAs(t, err, &inv)
		require.Equal(t, lab, get().Colony("lab"), "refused settings change nothing")
	})
}

func TestSetBudget(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		put(t, st, state.Spore{Wish: state.Wish{ID: "a", Generation: 1}}, state.Spore{Wish: state.Wish{ID: "arch", Rank: state.RankArch, Desired: state.Running, Generation: 1}})
		set := func(id string, b state.Budget) (bool, error) {
			var wrote bool
			err := update(st, func(ctx context.Context, tx state.Tx) (err error) {
				_, wrote, err = wish.SetBudget(ctx, tx, id, b, "user:ann", now)
				return err
			})
			return wrote, err
		}
		b := state.Budget{TokensPerDay: 20, CostPerDayMicros: 2_500_000}
		wrote, err := set("a", b)
		require.NoError(t, err)
		require.True(t, wrote)
		sp, evs := read(t, st, "a")
		require.Equal(t, b, sp.Budget)
		require.Equal(t, uint64(2), sp.Generation)
		require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "budget", From: "user:ann", At: now, Text: "budget 20 tokens and $2.50 a day"}}, evs)

		wrote, err = set("a", b)
		require.NoError(t, err)
		require.False(t, wrote, "the same budget writes nothing")

		_, err = set("a", state.Budget{TokensPerDay: -1})
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv)
		require.Equal(t, "budget.tokens_per_day", inv.Field)
		_, err = set("arch", b)
		var refused *wish.RefusedError
		require.ErrorAs(t, err, &refused)
		_, err = set("ghost", b)
		require.ErrorIs(t, err, state.ErrNotFound)

		wrote, err = set("a", state.Budget{})
		require.NoError(t, err)
		require.True(t, wrote)
		sp, evs = read(t, st, "a")
		require.Zero(t, sp.Budget)
		require.Equal(t, "no budget of its own", evs[len(evs)-1].Text)
	})
}

func TestWakeAfterBudgetWakesOnlyWhatABudgetSlept(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		put(t, st, state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running, Generation: 1}},
			state.Spore{Wish: state.Wish{ID: "b", Generation: 1}})
		require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error {
			_, _, err := wish.SleepBy(ctx, tx, "a", state.ByBudget, ": over budget (25/20 tokens today)", now)
			return err
		}))
		wake := func(id string) bool {
			var wrote bool
			require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) (err error) {
				_, wrote, err = wish.WakeAfterBudget(ctx, tx, id, ": within budget again", now)
				return err
			}))
			return wrote
		}
		require.False(t, wake("b"), "a person's sleep is left alone")
		require.True(t, wake("a"))
		sp, evs := read(t, st, "a")
		require.Equal(t, state.Running, sp.Desired)
		require.Equal(t, state.ByPerson, sp.DesiredBy)
		require.Equal(t, wish.BudgetFrom, evs[len(evs)-1].From)
		require.Equal(t, "desired Paused → Running: within budget again", evs[len(evs)-1].Text)
		require.False(t, wake("a"), "awake already")
	})
}
