package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestUpgradeFromVersion13: a store of schema 13, whose colony has a
// budget, is refused by Open until Init upgrades it to schema 14; its
// settings read back as they were, with no schedule, schedules then go
// in and read back, and check is clean. The schema-13 binary refuses the
// upgraded store cleanly ("upgrade sporectl"): it would drop the
// schedules and their claims when it wrote the settings back.
func TestUpgradeFromVersion13(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	lab := state.ColonySettings{Budget: state.Budget{TokensPerDay: 1000}, Egress: state.EgressNone}
	restore := olderBinary(13)
	s, created, err := Init(ctx, url, state.Settings{Runtime: "local"}.WithColony("lab", lab), Options{})
	restore()
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())

	_, err = Open(ctx, url, Options{})
	var inc *state.IncompatibleError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, 13, inc.Found)

	s, created, err = Init(ctx, url, state.Settings{}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, 14, s.Info().FormatVersion)
	done := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	sched := state.Schedule{Name: "standup", To: "lab-1", Cron: "0 9 * * 1-5", Timezone: "Europe/Paris", Prompt: "hello", Done: done}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		require.Equal(t, lab, st.Colony("lab"), "the settings of schema 13 are kept")
		c := st.Colony("lab")
		c.Schedules = []state.Schedule{sched}
		return tx.PutSettings(ctx, st.WithColony("lab", c))
	}))
	var got state.Settings
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; got, err = tx.Settings(ctx); return err }))
	require.Equal(t, []state.Schedule{sched}, got.Colony("lab").Schedules)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)

	restore = olderBinary(13)
	_, err = Open(ctx, url, Options{})
	restore()
	require.ErrorAs(t, err, &inc)
	require.Equal(t, 14, inc.Found)
	require.NotContains(t, err.Error(), "sporectl init", "a newer schema is not the older binary's to upgrade")
}
