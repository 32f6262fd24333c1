package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestCheckFindsDamage breaks the data behind the store's back, one way
// per case, and expects Check to name it (and normal reads to refuse a
// broken row with CorruptError rather than return it).
func TestCheckFindsDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage string
		want   string // substring of a problem's where+message
	}{
		{"gap", `DELETE FROM sporectl.events WHERE spore_id = 'one' AND seq = 2`, "gaps"},
		{"head ahead", `UPDATE sporectl.spores SET last_seq = 9 WHERE id = 'one'`, "last_seq is 9"},
		{"lost events", `DELETE FROM sporectl.events WHERE spore_id = 'one'`, "no events but last_seq is 3"},
		{"orphan events", `UPDATE sporectl.events SET spore_id = 'ghost' WHERE spore_id = 'two'`, "spore_id=ghost"},
		{"bad utf8", `UPDATE sporectl.events SET body = '\xff'::bytea WHERE spore_id = 'one' AND seq = 1`, "UTF-8"},
		{"bad line", `UPDATE sporectl.events SET line = '{'::bytea WHERE spore_id = 'one' AND seq = 1`, "JSON"},
		{"negative bridge_seq", `UPDATE sporectl.events SET bridge_seq = -1 WHERE spore_id = 'one' AND seq = 1`, "seq=1: negative bridge_seq"},
		{"bad spore row", `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'two'`, "colony"},
		{"bad outbox row", `UPDATE sporectl.outbox SET body = '\xc328'::bytea`, "not valid UTF-8"},
		{"no settings", `DELETE FROM sporectl.settings`, "settings rows"},
		// Schema 5's CHECKs keep these out; Check still reads every row
		// through the model's grammar, so it names them if one gets in.
		{"bad health", `ALTER TABLE sporectl.spores DROP CONSTRAINT spores_health_check;
			UPDATE sporectl.spores SET health = E'Dead\nreally' WHERE id = 'two'`, "health"},
		{"status ahead of wish", `ALTER TABLE sporectl.spores DROP CONSTRAINT spores_observed_generation_check;
			UPDATE sporectl.spores SET observed_generation = 5 WHERE id = 'two'`, "observed generation"},
		{"bad recovery duration", `UPDATE sporectl.settings SET doc = '{"runtime":"local","default_spec":{},"recovery":{"backoff_max":600}}'`, "duration 600"},
		{"bad recovery policy", `UPDATE sporectl.settings SET doc = '{"runtime":"local","default_spec":{},"recovery":{"backoff_initial":"1h","backoff_max":"1m"}}'`, "recovery.backoff_max"},
		// The gateway's record (schema 13): a form that is not the
		// column's, and values the form holds that the record's rules
		// refuse.
		{"model_usage not its form", `UPDATE sporectl.spores SET model_usage = '[{"hour":1}]' WHERE id = 'two'`, "id=two: model_usage: not an array"},
		{"model_usage negative", `UPDATE sporectl.spores SET model_usage = '[[1796634000,1,-5,0,0,0,0]]' WHERE id = 'two'`, "model usage"},
		{"model_usage off the hour", `UPDATE sporectl.spores SET model_usage = '[[1796634001,1,5,0,0,0,0]]' WHERE id = 'two'`, "on the hour"},
		{"model_usage out of order", `UPDATE sporectl.spores SET model_usage = '[[1796637600,1,5,0,0,0,0],[1796634000,1,5,0,0,0,0]]' WHERE id = 'two'`, "after the hour before it"},
		{"model_calls not its form", `UPDATE sporectl.spores SET model_calls = '[["a b",1796634000,1,0,0,0,0]]' WHERE id = 'two'`, "model call id"},
		{"model_calls bad escape", `UPDATE sporectl.spores SET model_calls = '[["a\u0041",1796634000,1,0,0,0,0]]' WHERE id = 'two'`, "id=two: model_calls: not an array"},
		{"orphan outbox", `ALTER TABLE sporectl.outbox DROP CONSTRAINT outbox_spore_id_fkey;
			UPDATE sporectl.outbox SET spore_id = 'ghost'`, "sporectl.outbox spore_id=ghost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, url := newStoreURL(t)
			ctx := context.Background()
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
				for _, id := range []string{"one", "two"} {
					if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
						return err
					}
					if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, Text: "a"}, {Kind: state.KindPrompt, Text: "b"}, {Kind: state.KindPrompt, Text: "c"}}); err != nil {
						return err
					}
				}
				_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: "one", From: "user:x", Text: "t"})
				return err
			}))
			rep, err := s.Check(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "clean before damage: %v", rep.Problems)

			adminExec(t, url, tc.damage)
			rep, err = s.Check(ctx)
			require.NoError(t, err)
			require.False(t, rep.OK())
			var all []string
			for _, p := range rep.Problems {
				all = append(all, p.Where+": "+p.Message)
			}
			require.Contains(t, strings.Join(all, "\n"), tc.want)
		})
	}
}

func TestCorruptRowIsRefused(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	adminExec(t, url, `UPDATE sporectl.spores SET colony = 'Bad Colony'`)
	err := s.View(ctx, func(tx state.Tx) error { _, err := tx.Spore(ctx, "one"); return err })
	var ce *state.CorruptError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Error(), "id=one")
}

// One row's impossible value is that spore's damage: a whole read returns
// the others and names it (state.DamagedError), so the pass, serve and
// the page go on for every other spore.
func TestWholeReadLeavesADamagedRowOut(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	for _, id := range []string{"one", "two", "three"} {
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore(id)) }))
	}
	adminExec(t, url, `UPDATE sporectl.spores SET colony = 'Bad Colony' WHERE id = 'two'`)
	err := s.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		var d *state.DamagedError
		require.ErrorAs(t, err, &d)
		require.Equal(t, []string{"two"}, d.IDs())
		require.Contains(t, d.Spores["two"].Error(), "id=two")
		ids := make([]string, 0, len(all))
		for _, sp := range all {
			ids = append(ids, sp.ID)
		}
		require.Equal(t, []string{"one", "three"}, ids)
		var ce *state.CorruptError
		require.ErrorAs(t, err, &ce, "a caller that knows nothing of damage still sees corruption")
		return nil
	})
	require.NoError(t, err)
}
