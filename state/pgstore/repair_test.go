package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storetest"
)

// repairFixture makes spores one, two and three with three events each,
// an outbox entry and a token for two.
func repairFixture(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"one", "two", "three"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, Text: "a"}, {Kind: state.KindPrompt, Text: "b"}, {Kind: state.KindPrompt, Text: "c"}}); err != nil {
				return err
			}
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: "two", From: "user:x", Text: "t"})
		return err
	}))
	adminExec(t, url, `INSERT INTO sporectl.tokens (spore_id, hash) VALUES ('two', $1)`, strings.Repeat("ab", 32))
	requireClean(t, s)
	return s, url
}

// damagedRows reads sporectl.damaged: per row, its table and its data.
type damagedRow struct {
	ID     int64
	What   string
	Detail string
	Data   map[string]any
}

func damagedRows(t *testing.T, url string) []damagedRow {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id, what, detail, data::text FROM sporectl.damaged ORDER BY id`)
	require.NoError(t, err)
	var out []damagedRow
	for rows.Next() {
		var r damagedRow
		var data string
		require.NoError(t, rows.Scan(&r.ID, &r.What, &r.Detail, &data))
		require.NoError(t, json.Unmarshal([]byte(data), &r.Data))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func sporeIDs(t *testing.T, s state.Store) []string {
	t.Helper()
	var ids []string
	require.NoError(t, s.View(context.Background(), func(tx state.Tx) error {
		all, err := tx.Spores(context.Background())
		for _, sp := range all {
			ids = append(ids, sp.ID)
		}
		return err
	}))
	return ids
}

// A spore row that does not read is set aside whole: its row, events,
// outbox and token rows are kept in sporectl.damaged, the spore leaves
// the store, the others are untouched, and check is clean.
func TestRepairSetsAnUnreadableSporeRowAside(t *testing.T) {
	s, url := repairFixture(t)
	ctx := context.Background()
	adminExec(t, url, `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'two'`)

	dry, err := s.Repair(ctx, "two", true)
	require.NoError(t, err)
	require.True(t, dry.Removed)
	require.True(t, dry.DryRun)
	require.Len(t, dry.Damage, 1)
	require.Contains(t, dry.Damage[0].Message, "id=two")
	require.Equal(t, []string{
		"table sporectl.damaged (1 row(s) of sporectl.spores)",
		"table sporectl.damaged (3 row(s) of sporectl.events)",
		"table sporectl.damaged (1 row(s) of sporectl.outbox)",
		"table sporectl.damaged (1 row(s) of sporectl.tokens)",
	}, dry.SetAside)
	require.Empty(t, damagedRows(t, url), "a dry run writes nothing")
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.False(t, rep.OK(), "a dry run leaves the damage")

	got, err := s.Repair(ctx, "two", false)
	require.NoError(t, err)
	require.True(t, got.Removed)
	require.Len(t, got.SetAside, 4)
	require.Regexp(t, `^table sporectl.damaged id=\d+ \(1 row\(s\) of sporectl.spores\)$`, got.SetAside[0])
	require.Regexp(t, `^table sporectl.damaged id=\d+\.\.\d+ \(3 row\(s\) of sporectl.events\)$`, got.SetAside[1])

	rows := damagedRows(t, url)
	require.Len(t, rows, 6)
	require.Equal(t, "sporectl.spores", rows[0].What)
	require.Equal(t, "Not Valid", rows[0].Data["colony"], "the row is kept as it was")
	require.Contains(t, rows[0].Detail, "colony")
	for i, seq := range []float64{1, 2, 3} {
		require.Equal(t, "sporectl.events", rows[1+i].What)
		require.Equal(t, seq, rows[1+i].Data["seq"])
	}
	require.Equal(t, "sporectl.outbox", rows[4].What)
	require.Equal(t, "m", rows[4].Data["id"])
	require.Equal(t, "sporectl.tokens", rows[5].What)

	require.Equal(t, []string{"one", "three"}, sporeIDs(t, s))
	for _, id := range []string{"one", "three"} {
		evs, _ := readAll(t, s, id)
		require.Len(t, evs, 3, "spore %s is untouched", id)
	}
	rep, err = s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "check: %v", rep.Problems)
	require.Len(t, rep.Notes, 1)
	require.Contains(t, rep.Notes[0].Message, "6 row(s) of 1 spore(s) set aside")

	_, err = s.Repair(ctx, "two", false)
	require.ErrorIs(t, err, state.ErrNotFound, "the spore is gone")
}

// An event row that does not read is kept in sporectl.damaged and
// replaced by a marker with the same seq; a repaired event follows, the
// damage mark is cleared, check is clean and a second repair finds
// nothing.
func TestRepairReplacesDamagedEventRows(t *testing.T) {
	s, url := repairFixture(t)
	ctx := context.Background()
	// A damaged database may lack the constraint that keeps kinds out.
	adminExec(t, url, `ALTER TABLE sporectl.events DROP CONSTRAINT events_kind_check;
		UPDATE sporectl.events SET kind = 'bogus' WHERE spore_id = 'one' AND seq = 2;
		UPDATE sporectl.events SET line = '{'::bytea WHERE spore_id = 'one' AND seq = 3`)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		st := sp.StatusAtWish()
		st.Health, st.HealthReason = "Error", state.ReasonStoreDamage
		return tx.PutStatus(ctx, "one", st)
	}))
	var ce *state.CorruptError
	require.ErrorAs(t, s.View(ctx, func(tx state.Tx) error { _, err := tx.Events(ctx, "one", 0, 0); return err }), &ce)

	dry, err := s.Repair(ctx, "one", true)
	require.NoError(t, err)
	require.Equal(t, 2, dry.Replaced)
	require.Equal(t, 1, dry.Kept)
	require.True(t, dry.Cleared)
	require.Equal(t, []state.Problem{
		{Where: "sporectl.events spore_id=one seq=2", Message: `unknown kind "bogus"`},
		{Where: "sporectl.events spore_id=one seq=3", Message: "line is not valid JSON"},
	}, dry.Damage)
	require.Empty(t, damagedRows(t, url), "a dry run writes nothing")

	got, err := s.Repair(ctx, "one", false)
	require.NoError(t, err)
	require.Equal(t, 2, got.Replaced)
	require.Equal(t, 1, got.Kept)
	require.True(t, got.Cleared)
	require.False(t, got.Removed)
	rows := damagedRows(t, url)
	require.Len(t, rows, 2)
	require.Equal(t, "bogus", rows[0].Data["kind"], "the row is kept as it was")
	require.Equal(t, float64(2), rows[0].Data["seq"])
	require.Equal(t, `\x7b`, rows[1].Data["line"], "bytea kept as its hex")
	require.Equal(t, []string{fmt.Sprintf("table sporectl.damaged id=%d..%d (2 row(s) of sporectl.events)", rows[0].ID, rows[1].ID)}, got.SetAside)

	evs, _ := readAll(t, s, "one")
	require.Len(t, evs, 4)
	require.Equal(t, "a", evs[0].Text, "the intact event is kept")
	for i, e := range evs[1:3] {
		require.Equal(t, uint64(i+2), e.Seq)
		require.Equal(t, state.KindLifecycle, e.Kind)
		require.Equal(t, "damaged", e.Action)
		require.Contains(t, e.Text, fmt.Sprintf("table sporectl.damaged id=%d", rows[i].ID))
	}
	require.Equal(t, "repaired", evs[3].Action)
	require.Equal(t, uint64(4), evs[3].Seq)
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		require.Empty(t, sp.HealthReason, "the mark is cleared")
		return err
	}))
	for _, id := range []string{"two", "three"} {
		evs, _ := readAll(t, s, id)
		require.Len(t, evs, 3, "spore %s is untouched", id)
	}
	requireClean(t, s)

	again, err := s.Repair(ctx, "one", false)
	require.NoError(t, err)
	require.Empty(t, again.Damage)
	require.Zero(t, again.Replaced)
	require.False(t, again.Cleared)
	require.Equal(t, 4, again.Kept)
	evs, _ = readAll(t, s, "one")
	require.Len(t, evs, 4, "a repair that finds nothing writes nothing")
}

// Text that is not UTF-8 is damage too (what check names).
func TestRepairReplacesAnEventThatIsNotUTF8(t *testing.T) {
	s, url := repairFixture(t)
	ctx := context.Background()
	adminExec(t, url, `UPDATE sporectl.events SET body = '\xff'::bytea WHERE spore_id = 'three' AND seq = 1`)
	got, err := s.Repair(ctx, "three", false)
	require.NoError(t, err)
	require.Equal(t, 1, got.Replaced)
	require.Equal(t, "action, sender or text is not valid UTF-8", got.Damage[0].Message)
	requireClean(t, s)
}

// A spore a pass marked StoreDamage whose data reads has the mark cleared
// and a repaired event recorded; a dry run only says so.
func TestRepairClearsAMarkWhenNothingIsDamaged(t *testing.T) {
	s, _ := repairFixture(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "three")
		if err != nil {
			return err
		}
		st := sp.StatusAtWish()
		st.Health, st.HealthReason = "Error", state.ReasonStoreDamage
		return tx.PutStatus(ctx, "three", st)
	}))
	dry, err := s.Repair(ctx, "three", true)
	require.NoError(t, err)
	require.True(t, dry.Cleared)
	evs, _ := readAll(t, s, "three")
	require.Len(t, evs, 3, "a dry run writes nothing")

	got, err := s.Repair(ctx, "three", false)
	require.NoError(t, err)
	require.True(t, got.Cleared)
	require.Empty(t, got.Damage)
	require.Equal(t, 3, got.Kept)
	evs, _ = readAll(t, s, "three")
	require.Len(t, evs, 4)
	require.Equal(t, "repaired", evs[3].Action)
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "three")
		require.Empty(t, sp.Health)
		require.Empty(t, sp.HealthReason)
		return err
	}))
}

func TestRepairUnknownSpore(t *testing.T) {
	s, _ := newStoreURL(t)
	_, err := s.Repair(context.Background(), "ghost", false)
	require.ErrorIs(t, err, state.ErrNotFound)
	_, err = s.Repair(context.Background(), "Not An Id", true)
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
}
