package dirstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestUpgradeFormat6: a store written by the format-6 code, which knew no
// gateway record, is refused until init (that code decodes rows leniently
// and writes them back whole, so it would drop the gateway's count, the
// spend budgets judge), and init upgrades it in place: its spores'
// activity, health, budgets, outboxes and dead letter stay, no spore has
// a gateway record, and the gateway's counts then go in and read back
// through the next handle.
func TestUpgradeFormat6(t *testing.T) {
	ctx := t.Context()
	root := copyFixtureOf(t, 6)
	requireFormatRefused(t, root, 6)
	s, created, err := Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	want := fixtureDumpOf(t, 6)
	require.NotEmpty(t, want.Spores[0].Activity)
	require.Len(t, want.Dead["beta"], 1)
	for _, sp := range want.Spores {
		require.Zero(t, sp.GatewayRecord)
	}
	requireUpgraded(t, s, want)

	now := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	u := state.Usage{InputTokens: 300, OutputTokens: 40, CostMicros: 1200}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := state.CountModelCall(ctx, tx, "alpha", "msg_1", u, now)
		return err
	}))
	snap, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.NotContains(t, string(snap), `"model_usage"`, "the upgrade counts nothing")
	o, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	sp := view(t, o, func(tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "alpha") })
	require.Equal(t, u, sp.CountedOn(now))
	require.Equal(t, want.Spores[0].Activity, sp.Activity, "the bridge's report is kept beside the count")
	rep, err := o.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}
