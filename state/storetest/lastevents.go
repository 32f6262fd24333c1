package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testLastEvents: LastEvents is Tail(1) of each id at once, every field
// of the event kept; ids that do not exist and spores with an empty log
// are absent, not errors; repeated ids are read once; inside an Update it
// sees the transaction's own appends and deletions, and a View keeps its
// snapshot while another transaction appends.
func testLastEvents(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "a", "b", "empty", "gone")
	appendN(t, s, "a", 3)
	appendN(t, s, "gone", 2)
	at := t0.Add(1234567 * time.Microsecond) // state.Precision
	agent := state.Event{Kind: state.KindAgent, At: at, BridgeSeq: 42, Line: json.RawMessage(`{"type":"assistant","n":1}`)}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "b", []state.Event{{Kind: state.KindLifecycle, Action: "created", Text: "hello"}, agent})
		return err
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "gone") }))

	ids := []string{"b", "ghost", "a", "empty", "gone", "a"}
	got := view(t, s, func(ctx context.Context, tx state.Tx) (map[string]state.Event, error) { return tx.LastEvents(ctx, ids) })
	require.Len(t, got, 2, "only a and b have a spore and an event: %v", got)
	// The same event Tail(1) reads, field for field.
	for _, id := range []string{"a", "b"} {
		tail := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Tail(ctx, id, 1) })
		require.Len(t, tail, 1)
		require.Equal(t, tail[0], got[id], id)
	}
	require.Equal(t, uint64(3), got["a"].Seq)
	require.Equal(t, "prompt 2", got["a"].Text)
	b := got["b"]
	require.Equal(t, uint64(2), b.Seq)
	require.Equal(t, state.KindAgent, b.Kind)
	require.Equal(t, uint64(42), b.BridgeSeq)
	require.JSONEq(t, string(agent.Line), string(b.Line))
	require.True(t, at.Equal(b.At), "at %v, want %v", b.At, at)

	for name, none := range map[string][]string{"nil": nil, "empty": {}, "only missing": {"ghost", "empty", "gone"}} {
		m := view(t, s, func(ctx context.Context, tx state.Tx) (map[string]state.Event, error) {
			return tx.LastEvents(ctx, none)
		})
		require.NotNil(t, m, name)
		require.Empty(t, m, name)
	}

	// Inside an Update: its own appends and deletions are read.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "empty", []state.Event{{Kind: state.KindPrompt, From: "user:test", Text: "first"}}); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "a", []state.Event{{Kind: state.KindPrompt, From: "user:test", Text: "fourth"}}); err != nil {
			return err
		}
		if err := tx.DeleteSpore(ctx, "b"); err != nil {
			return err
		}
		m, err := tx.LastEvents(ctx, []string{"a", "b", "empty"})
		require.NoError(t, err)
		require.Len(t, m, 2, "%v", m)
		require.Equal(t, "fourth", m["a"].Text)
		require.Equal(t, uint64(4), m["a"].Seq)
		require.Equal(t, "first", m["empty"].Text)
		require.Equal(t, uint64(1), m["empty"].Seq)
		return nil
	}))

	// A View reads its snapshot: an append committed while it runs is not
	// in it, and the next View sees it.
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		before, err := tx.LastEvents(ctx, []string{"a"})
		require.NoError(t, err)
		require.Equal(t, uint64(4), before["a"].Seq)
		appendN(t, s, "a", 1)
		again, err := tx.LastEvents(ctx, []string{"a"})
		require.NoError(t, err)
		require.Equal(t, before, again)
		return nil
	}))
	after := view(t, s, func(ctx context.Context, tx state.Tx) (map[string]state.Event, error) {
		return tx.LastEvents(ctx, []string{"a"})
	})
	require.Equal(t, uint64(5), after["a"].Seq)
}
