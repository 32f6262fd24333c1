package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// futureBinary appends migrations to the list, standing in for a newer
// binary, and returns the function that restores the list.
func futureBinary(extra ...migration) (restore func()) {
	saved := migrations
	migrations = append(append([]migration(nil), saved...), extra...)
	return func() { migrations = saved }
}

func columnExists(t *testing.T, url, table, column string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = 'sporectl' AND table_name = $1 AND column_name = $2`, table, column).Scan(&n))
	return n == 1
}

// TestUpgrade: a store made by an older binary is refused by Open
// (IncompatibleError: run init) and upgraded by Init, which keeps the data
// and the settings.
func TestUpgrade(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, created, err := Init(ctx, url, state.Settings{Runtime: "kube"}, Options{})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())

	next := latestVersion() + 1
	t.Cleanup(futureBinary(migration{version: next, name: "9999_note.sql", sql: `ALTER TABLE sporectl.spores ADD COLUMN note text NOT NULL DEFAULT ''`}))
	_, err = Open(ctx, url, Options{})
	var inc *state.IncompatibleError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, next-1, inc.Found)
	require.Contains(t, inc.Error(), "sporectl init")

	s, created, err = Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, next, s.Info().FormatVersion)
	require.True(t, columnExists(t, url, "spores", "note"))
	var st state.Settings
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; st, err = tx.Settings(ctx); return err }))
	require.Equal(t, "kube", st.Runtime, "an upgrade keeps the settings")
}

// TestFailedMigrationChangesNothing: a migration that fails half way
// leaves the schema exactly at the previous version (DDL is
// transactional), and Open still works with the older binary.
func TestFailedMigrationChangesNothing(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, _, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	before := latestVersion()

	restore := futureBinary(migration{version: before + 1, name: "9999_broken.sql",
		sql: `ALTER TABLE sporectl.spores ADD COLUMN half text; SELECT 1/0`})
	_, _, err = Init(ctx, url, state.Settings{}, Options{})
	restore()
	require.Error(t, err)
	require.Contains(t, err.Error(), "9999_broken.sql")
	require.False(t, columnExists(t, url, "spores", "half"), "no half-applied migration")
	o, err := Open(ctx, url, Options{})
	require.NoError(t, err)
	defer o.Close()
	require.Equal(t, before, o.Info().FormatVersion)
}

// TestUpgradeFromVersion1: a database made by a binary that knew only
// migration 0001 is refused by Open ("run sporectl init") and upgraded by
// Init to the generation and health columns, keeping its rows: existing
// spores start at generation 0 with no recorded health.
func TestUpgradeFromVersion1(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	saved := migrations
	migrations = saved[:1]
	s, created, err := Init(ctx, url, state.Settings{Runtime: "kube"}, Options{})
	migrations = saved
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())
	require.False(t, columnExists(t, url, "spores", "generation"))
	// What the version-1 binary wrote, in its own columns.
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO sporectl.spores (id, colony, rank, desired, created, updated, restarts, bridge_seq, last_seq)
		VALUES ('old', 'lab', 'spore', 'Running', now(), now(), 2, 9, 0)`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO sporectl.outbox (spore_id, id, sender, body, at) VALUES ('old', 'm1', 'user:a', 'hi', now())`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	_, err = Open(ctx, url, Options{})
	var inc *state.IncompatibleError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, 1, inc.Found)
	require.Equal(t, latestVersion(), inc.Newest)
	require.Contains(t, err.Error(), "run 'sporectl init' to upgrade it")

	s, created, err = Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, latestVersion(), s.Info().FormatVersion)
	for _, c := range []string{"generation", "health", "health_reason", "loop_interval_ms", "loop_due", "activity", "incidents",
		"sleep_after_ms", "desired_by", "active_at"} {
		require.True(t, columnExists(t, url, "spores", c), c)
	}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "old")
		if err != nil {
			return err
		}
		require.Zero(t, sp.Generation)
		require.Empty(t, sp.Health)
		require.Zero(t, sp.Loop)
		require.True(t, sp.LoopDue.IsZero())
		require.Zero(t, sp.SleepAfter)
		require.Empty(t, sp.DesiredBy)
		require.True(t, sp.ActiveAt.IsZero())
		require.Equal(t, 2, sp.Restarts, "old columns are kept")
		p, err := tx.Pending(ctx)
		if err != nil {
			return err
		}
		require.Len(t, p["old"], 1)
		sp.Generation, sp.Health, sp.HealthReason = 3, "Dead", "OOMKilled"
		return tx.UpdateSpore(ctx, sp)
	}))
	var got state.Spore
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; got, err = tx.Spore(ctx, "old"); return err }))
	require.Equal(t, uint64(3), got.Generation)
	require.Equal(t, "OOMKilled", got.HealthReason)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)

	// The CHECK constraint backs the model's bound.
	conn, err = pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE sporectl.spores SET generation = -1 WHERE id = 'old'`)
	require.ErrorContains(t, err, "check constraint")
}
