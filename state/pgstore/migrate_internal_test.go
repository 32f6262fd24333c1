package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/storetest"
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
		"sleep_after_ms", "desired_by", "active_at", "budget_tokens_per_day", "budget_cost_per_day_micros"} {
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
		_, err = storetest.Put(ctx, tx, sp)
		return err
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

// olderBinary cuts the migration list to the first version files,
// standing in for the binary that knew only those, and returns the
// function that restores the list.
func olderBinary(version int) (restore func()) {
	saved := migrations
	migrations = saved[:version]
	return func() { migrations = saved }
}

// initVersion4 makes a store as a binary that knew schema 4 did.
func initVersion4(t *testing.T) string {
	t.Helper()
	url := pgtest.NewDatabase(t)
	restore := olderBinary(4)
	s, created, err := Init(context.Background(), url, state.Settings{Runtime: "kube"}, Options{})
	restore()
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())
	require.False(t, columnExists(t, url, "spores", "observed_generation"))
	return url
}

func sqlExec(t *testing.T, url, sql string, args ...any) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// insertVersion4 writes sp in schema 4's columns, as the binary that knew
// schema 4 wrote it (no observed_generation), with a log of last events.
func insertVersion4(t *testing.T, url string, sp state.Spore, last int) {
	t.Helper()
	var failures, notBefore, loopDue any
	if sp.Failures != nil {
		failures = sp.Failures
	}
	if !sp.NotBefore.IsZero() {
		notBefore = sp.NotBefore
	}
	if !sp.LoopDue.IsZero() {
		loopDue = sp.LoopDue
	}
	require.NoError(t, sqlExec(t, url, `INSERT INTO sporectl.spores (id, colony, rank, swarm, role, desired,
		spec_image, spec_cpu, spec_memory, spec_storage, created, updated,
		restarts, failures, not_before, breaker_open, bridge_seq, last_seq,
		generation, health, health_reason, loop_interval_ms, loop_due, activity, incidents)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23, $24, $25)`,
		sp.ID, sp.Colony, string(sp.Rank), sp.Swarm, sp.Role, string(sp.Desired),
		sp.Spec.Image, sp.Spec.CPU, sp.Spec.Memory, sp.Spec.Storage, sp.Created, sp.Updated,
		sp.Restarts, failures, notBefore, sp.BreakerOpen, int64(sp.BridgeSeq), last,
		int64(sp.Generation), string(sp.Health), sp.HealthReason, time.Duration(sp.Loop).Milliseconds(), loopDue,
		encodeActivity(sp.Activity), jsonOrNull(sp.Incidents)))
	for seq := 1; seq <= last; seq++ {
		require.NoError(t, sqlExec(t, url, `INSERT INTO sporectl.events (spore_id, seq, at, kind, body) VALUES ($1, $2, $3, 'prompt', 'hello')`,
			sp.ID, seq, sp.Updated))
	}
}

// TestUpgradeFromVersion4: schema 5 keeps every field of the spores a
// schema-4 binary wrote and gives each an observed generation of 0, not
// its generation: a status written before the column existed may have
// been concluded from an older wish. A pass writes its status again at
// the generation it reads; one that claims 0 is stale. The new CHECKs
// back the model's rules.
func TestUpgradeFromVersion4(t *testing.T) {
	url := initVersion4(t)
	ctx := context.Background()
	at := func(min int) time.Time { return time.Date(2026, 3, 4, 10, min, 0, 123456000, time.UTC) }
	busy := state.Spore{
		Wish: state.Wish{ID: "busy", Colony: "lab", Rank: state.RankSpore, Swarm: "team", Role: "dev", Desired: state.Running,
			Spec:    state.Spec{Image: "agent:7", CPU: "2", Memory: "3Gi", Storage: "5Gi"},
			Created: at(0), Updated: at(5), Generation: 7, Loop: state.Duration(5 * time.Minute)},
		Status: state.Status{
			HealthRecord: state.HealthRecord{Restarts: 2, Failures: []time.Time{at(1), at(2)}, NotBefore: at(9), BreakerOpen: true,
				Health: "Dead", HealthReason: "OOMKilled"},
			IngestRecord: state.IngestRecord{BridgeSeq: 41, Activity: []state.HourActivity{
				{Hour: time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC), Turns: 3, ToolCalls: 4, InputTokens: 100, OutputTokens: 50, CostMicros: 1200},
				{Hour: time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC), Turns: 1},
			}},
			UpkeepRecord:  state.UpkeepRecord{LoopDue: at(30)},
			SummonsRecord: state.SummonsRecord{Incidents: []state.Incident{{Key: "collision:main.go:busy,quiet", At: at(3)}}}},
	}
	quiet := state.Spore{Wish: state.Wish{ID: "quiet", Colony: "lab", Rank: state.RankArch, Desired: state.Paused, Created: at(0), Updated: at(0)}}
	insertVersion4(t, url, busy, 3)
	insertVersion4(t, url, quiet, 0)

	s, created, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, latestVersion(), s.Info().FormatVersion)
	var got []state.Spore
	var head state.SporeHead
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		var err error
		if got, err = tx.Spores(ctx); err != nil {
			return err
		}
		head, err = tx.Head(ctx, "busy")
		return err
	}))
	require.Equal(t, []state.Spore{busy, quiet}, got, "every field is kept, and the observed generation is 0")
	require.Equal(t, uint64(3), head.LastSeq)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)

	err = s.Update(ctx, func(tx state.Tx) error { return tx.PutStatus(ctx, "busy", busy.Status) })
	var stale *state.StaleError
	require.ErrorAs(t, err, &stale, "a status claiming generation 0 is stale at generation 7")
	require.Equal(t, uint64(7), stale.Stored)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "busy")
		if err != nil {
			return err
		}
		sp.ObservedGeneration, sp.Restarts = sp.Generation, 3
		return tx.PutStatus(ctx, "busy", sp.Status)
	}))
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "busy")
		require.Equal(t, uint64(7), sp.ObservedGeneration)
		require.Equal(t, busy.Wish, sp.Wish)
		return err
	}))

	// The CHECKs back the model's rules behind the store's back too.
	for _, bad := range []string{
		`UPDATE sporectl.spores SET observed_generation = 8 WHERE id = 'busy'`,
		`UPDATE sporectl.spores SET observed_generation = -1 WHERE id = 'busy'`,
		`UPDATE sporectl.spores SET generation = 6 WHERE id = 'busy'`,
		`UPDATE sporectl.spores SET health = 'dead' WHERE id = 'busy'`,
		`UPDATE sporectl.spores SET health = 'Dead!' WHERE id = 'busy'`,
		`UPDATE sporectl.spores SET health = 'D` + strings.Repeat("e", 32) + `' WHERE id = 'busy'`,
	} {
		require.ErrorContains(t, sqlExec(t, url, bad), "check constraint", bad)
	}
	require.NoError(t, sqlExec(t, url, `UPDATE sporectl.spores SET health = 'D`+strings.Repeat("e", 31)+`' WHERE id = 'busy'`),
		"32 bytes is a name")
}

// TestUpgradeRefusesBadHealth: a schema-4 row whose health is not a
// state's name stops the upgrade to schema 5 with an error naming the
// spore; nothing is changed (the older binary still opens the store, the
// row is as it was), and once a person corrects the row, Init upgrades.
func TestUpgradeRefusesBadHealth(t *testing.T) {
	url := initVersion4(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	for _, h := range []struct{ id, health string }{{"fine", "Dead"}, {"odd", "dead (oom)"}, {"worse", "Healthy\nreally"}} {
		insertVersion4(t, url, state.Spore{
			Wish:   state.Wish{ID: h.id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: at, Updated: at, Generation: 2},
			Status: state.Status{HealthRecord: state.HealthRecord{Health: state.Health(h.health)}},
		}, 0)
	}

	_, _, err := Init(ctx, url, state.Settings{}, Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "0005_wish_status.sql")
	require.Contains(t, err.Error(), `spore odd has health "dead (oom)"`, "the first bad row, by id")
	require.False(t, columnExists(t, url, "spores", "observed_generation"), "no half-applied migration")
	restore := olderBinary(4)
	o, err := Open(ctx, url, Options{})
	restore()
	require.NoError(t, err, "the schema-4 binary still opens the store")
	require.Equal(t, 4, o.Info().FormatVersion)
	require.NoError(t, o.Close())
	var health string
	require.NoError(t, func() error {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		return conn.QueryRow(ctx, `SELECT health FROM sporectl.spores WHERE id = 'odd'`).Scan(&health)
	}())
	require.Equal(t, "dead (oom)", health, "the row is not rewritten")

	require.NoError(t, sqlExec(t, url, `UPDATE sporectl.spores SET health = '' WHERE id IN ('odd', 'worse')`))
	s, _, err := Init(ctx, url, state.Settings{}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, latestVersion(), s.Info().FormatVersion)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
}

// TestUpgradeFromVersion11: a store made by a binary of schema 11, with
// spores and events, is upgraded by Init to the damaged table (schema 12)
// keeping its rows; check is clean and a repair can set a damaged row
// aside into the new table.
func TestUpgradeFromVersion11(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	saved := migrations
	migrations = saved[:11]
	s, created, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	migrations = saved
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())
	// What the schema-11 binary wrote, in its own columns (this binary
	// writes columns of later schemas).
	for _, id := range []string{"a", "b"} {
		sp := storetest.Spore(id)
		require.NoError(t, sqlExec(t, url, `INSERT INTO sporectl.spores (id, colony, rank, desired, spec_cpu, spec_memory, spec_storage,
			created, updated, last_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, 1)`,
			id, sp.Colony, string(sp.Rank), string(sp.Desired), sp.Spec.CPU, sp.Spec.Memory, sp.Spec.Storage, sp.Created))
		require.NoError(t, sqlExec(t, url, `INSERT INTO sporectl.events (spore_id, seq, at, kind, body) VALUES ($1, 1, $2, 'prompt', 'hi')`, id, sp.Created))
	}
	var exists bool
	require.NoError(t, sqlQueryRow(t, url, `SELECT to_regclass('sporectl.damaged') IS NOT NULL`, &exists))
	require.False(t, exists)

	s, created, err = Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, created)
	require.Equal(t, latestVersion(), s.Info().FormatVersion)
	require.True(t, columnExists(t, url, "damaged", "data"))
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
	require.Equal(t, 2, rep.Spores)
	require.Equal(t, uint64(2), rep.Events)

	require.NoError(t, sqlExec(t, url, `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'b'`))
	got, err := s.Repair(ctx, "b", false)
	require.NoError(t, err)
	require.True(t, got.Removed)
	var n int
	require.NoError(t, sqlQueryRow(t, url, `SELECT count(*) FROM sporectl.damaged WHERE spore_id = 'b'`, &n))
	require.Equal(t, 2, n, "the spore row and its event")
	rep, err = s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
}

func sqlQueryRow(t *testing.T, url, q string, dest ...any) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, q).Scan(dest...)
}
