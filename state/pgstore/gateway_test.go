package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// A spore whose gateway record does not read (model_usage damaged behind
// the store's back) is its damage alone: a whole read returns the others
// and names it, and a repair sets its rows aside, the damaged value kept
// as it was, like any other row that does not read.
func TestDamagedGatewayRecordIsSetAside(t *testing.T) {
	s, url := repairFixture(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := state.CountModelCall(ctx, tx, "two", "msg_1", state.Usage{InputTokens: 5}, time.Date(2026, 12, 7, 9, 5, 0, 0, time.UTC))
		return err
	}))
	requireClean(t, s)
	adminExec(t, url, `UPDATE sporectl.spores SET model_usage = '[[1796634000,1,-5,0,0,0,0]]' WHERE id = 'two'`)

	err := s.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		var d *state.DamagedError
		require.ErrorAs(t, err, &d)
		require.Equal(t, []string{"two"}, d.IDs())
		require.Contains(t, d.Spores["two"].Error(), "model usage")
		require.Len(t, all, 2)
		return nil
	})
	require.NoError(t, err)

	got, err := s.Repair(ctx, "two", false)
	require.NoError(t, err)
	require.True(t, got.Removed)
	rows := damagedRows(t, url)
	require.Equal(t, "sporectl.spores", rows[0].What)
	require.Equal(t, []any{[]any{1796634000.0, 1.0, -5.0, 0.0, 0.0, 0.0, 0.0}}, rows[0].Data["model_usage"], "the value is kept as it was")
	require.Contains(t, rows[0].Detail, "model usage")
	require.Equal(t, []string{"one", "three"}, sporeIDs(t, s))
	requireClean(t, s)
}
