package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestUpgradeFromVersion12: a store of schema 12, whose spores have
// activity and no gateway record, is refused by Open until Init upgrades
// it to schema 13; its rows read back as they were, with an empty record,
// the gateway's counts then go in and read back, and check is clean. The
// schema-12 binary refuses the upgraded store cleanly ("upgrade
// sporectl"), since its passes would judge budgets without the count.
func TestUpgradeFromVersion12(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	restore := olderBinary(12)
	s, created, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	restore()
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())
	require.False(t, columnExists(t, url, "spores", "model_usage"))
	hour := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	require.NoError(t, sqlExec(t, url, `INSERT INTO sporectl.spores (id, colony, rank, desired, created, updated, activity, last_seq)
		VALUES ('old', 'lab', 'spore', 'Running', $1, $1, $2, 0)`, hour, encodeActivity([]state.HourActivity{{Hour: hour, Turns: 2, InputTokens: 50}})))

	_, err = Open(ctx, url, Options{})
	var inc *state.IncompatibleError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, 12, inc.Found)
	require.Contains(t, err.Error(), "run `sporectl init` to upgrade it")

	s, created, err = Init(ctx, url, state.Settings{}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, latestVersion(), s.Info().FormatVersion)
	require.True(t, columnExists(t, url, "spores", "model_usage"))
	require.True(t, columnExists(t, url, "spores", "model_calls"))

	u := state.Usage{InputTokens: 100, OutputTokens: 7, CostMicros: 900}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "old")
		if err != nil {
			return err
		}
		require.Zero(t, sp.GatewayRecord, "rows of schema 12 have no gateway record")
		require.Equal(t, int64(50), sp.Activity[0].InputTokens, "old columns are kept")
		_, err = state.CountModelCall(ctx, tx, "old", "msg_1", u, hour.Add(10*time.Minute))
		return err
	}))
	var sp state.Spore
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; sp, err = tx.Spore(ctx, "old"); return err }))
	require.Equal(t, u, sp.CountedOn(hour))
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)

	restore = olderBinary(12)
	_, err = Open(ctx, url, Options{})
	restore()
	require.ErrorAs(t, err, &inc)
	require.Equal(t, latestVersion(), inc.Found)
	require.Equal(t, 12, inc.Newest)
	require.NotContains(t, err.Error(), "sporectl init", "a newer schema is not the older binary's to upgrade")
}
