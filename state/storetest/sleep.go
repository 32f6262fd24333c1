package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testIdleSleep: a spore's SleepAfter, DesiredBy and ActiveAt are stored
// exactly (ActiveAt at the store's precision), read back by Spore and
// Spores, cleared back to zero, and bad ones refused with nothing
// written.
func testIdleSleep(t *testing.T, s state.Store) {
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("one")) }))
	get := func() state.Spore { return spore(t, s, "one") }
	got := get()
	require.Zero(t, got.SleepAfter)
	require.Empty(t, got.DesiredBy)
	require.True(t, got.ActiveAt.IsZero())

	active := time.Date(2026, 11, 1, 12, 30, 0, 123456789, time.UTC)
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) {
		sp.SleepAfter, sp.DesiredBy, sp.ActiveAt = state.Duration(90*time.Minute), state.ByIdle, active
	}))
	got = get()
	require.Equal(t, state.Duration(90*time.Minute), got.SleepAfter)
	require.Equal(t, state.ByIdle, got.DesiredBy)
	require.True(t, got.ActiveAt.Equal(state.Stamp(active)), "%s", got.ActiveAt)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, state.ByIdle, spores[0].DesiredBy)
	require.Equal(t, state.Duration(90*time.Minute), spores[0].SleepAfter)

	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.SleepAfter, sp.DesiredBy, sp.ActiveAt = 0, state.ByPerson, time.Time{} }))
	got = get()
	require.Zero(t, got.SleepAfter)
	require.Empty(t, got.DesiredBy)
	require.True(t, got.ActiveAt.IsZero())

	for name, fn := range map[string]func(*state.Spore){
		"sleep after under a minute": func(sp *state.Spore) { sp.SleepAfter = state.Duration(59 * time.Second) },
		"sleep after over 30 days":   func(sp *state.Spore) { sp.SleepAfter = state.MaxSleepAfter + 1 },
		"unknown desired by":         func(sp *state.Spore) { sp.DesiredBy = "cron" },
		"idle while desired running": func(sp *state.Spore) { sp.Desired, sp.DesiredBy = state.Running, state.ByIdle },
	} {
		err := update(ctx, s, "one", fn)
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.Equal(t, got.Wish, get().Wish, "%s: nothing written", name)
	}
}

// testColonySettings: the colonies' idle-sleep settings round-trip, the
// zero value removes a colony, and a bad name or bound is refused with
// an error naming the colony, nothing written.
func testColonySettings(t *testing.T, s state.Store) {
	ctx := t.Context()
	get := func() state.Settings {
		return view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	}
	put := func(st state.Settings) error {
		return s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, st) })
	}
	base := get()
	lab := state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute), WakeOnMessage: true}
	pods := state.ColonySettings{Pod: &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "pods"},
		Tolerations: []state.Toleration{{Key: "agents", Operator: state.TolerationExists}}}}
	good := base.WithColony("lab", lab).WithColony("ops", state.ColonySettings{WakeOnMessage: true}).WithColony("pods", pods)
	require.NoError(t, put(good))
	got := get()
	require.Equal(t, lab, got.Colony("lab"))
	require.Equal(t, state.ColonySettings{WakeOnMessage: true}, got.Colony("ops"))
	require.Equal(t, state.ColonySettings{}, got.Colony("other"))
	require.Equal(t, pods, got.Colony("pods"), "a colony's pod options round-trip")
	require.True(t, got.Colony("pods").Equal(pods))

	for name, bad := range map[string]state.Settings{
		"bad name":         good.WithColony("Bad Name", lab),
		"under a minute":   good.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(time.Second)}),
		"over thirty days": good.WithColony("lab", state.ColonySettings{SleepAfter: state.MaxSleepAfter * 2}),
		"bad pod label":    good.WithColony("lab", state.ColonySettings{Pod: &state.PodOptions{Labels: map[string]string{"sporectl.dev/spore": "x"}}}),
	} {
		err := put(bad)
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.True(t, strings.HasPrefix(inv.Field, "colon"), "%s: field %q", name, inv.Field)
		require.Equal(t, lab, get().Colony("lab"), "%s: nothing written", name)
	}

	// Pod options that set nothing are no settings: the colony goes.
	require.NoError(t, put(get().WithColony("pods", state.ColonySettings{Pod: &state.PodOptions{}})))
	require.NotContains(t, *get().Colonies, "pods")
	require.NoError(t, put(get().WithColony("lab", state.ColonySettings{}).WithColony("ops", state.ColonySettings{})))
	require.Nil(t, get().Colonies, "the last colony removed removes the key")
}
