package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// found is one FindAction answer, for comparing in a table.
type found struct {
	ev state.Event
	ok bool
}

// testFindAction: FindAction finds the newest prompt or message event
// with an action, however many agent lines (long ones, ones that quote
// the id) follow it; not one of another kind, nor one older than since;
// the transaction's own appends count; a missing spore is ErrNotFound
// and another kind an InvalidError.
func testFindAction(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "busy", "quiet")
	// Agent lines that mention the ids in every way a line can: the
	// lookup must not take them for the events.
	quoting := json.RawMessage(`{"type":"assistant","kind":"prompt","action":"m-1","text":"\"kind\":\"prompt\",\"action\":\"m-1\""}`)
	long := json.RawMessage(fmt.Sprintf(`{"type":"assistant","text":%q}`, strings.Repeat("x", 100<<10)))
	agents := func(n int, at time.Time) []state.Event {
		evs := make([]state.Event, n)
		for i := range evs {
			line := json.RawMessage(fmt.Sprintf(`{"type":"assistant","n":%d}`, i))
			switch i % 50 {
			case 7:
				line = quoting
			case 31:
				line = long
			}
			// A bridge's clock may be far behind: agent lines never stop the search.
			evs[i] = state.Event{Kind: state.KindAgent, At: at.Add(-48 * time.Hour), BridgeSeq: uint64(i + 1), Line: line}
		}
		return evs
	}
	batches := [][]state.Event{
		{{Kind: state.KindLifecycle, Action: "created", At: t0}},
		{{Kind: state.KindPrompt, Action: "m-1", From: "user:alice", Text: "first", At: t0.Add(time.Minute)}},
		agents(300, t0),
		{{Kind: state.KindMessage, Action: "m-2", From: "spore:arch", Text: "second", At: t0.Add(2 * time.Minute)}},
		{{Kind: state.KindPrompt, Action: "m-1", From: "user:alice", Text: "first, again", At: t0.Add(3 * time.Minute)}},
		agents(200, t0),
		{{Kind: state.KindLifecycle, Action: "m-3", Text: "a lifecycle event with an id-like action", At: t0.Add(4 * time.Minute)}},
		agents(100, t0),
	}
	for _, b := range batches {
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, "busy", b)
			return err
		}))
	}
	find := func(id string, kind state.EventKind, action string, since time.Time) found {
		t.Helper()
		return view(t, s, func(ctx context.Context, tx state.Tx) (found, error) {
			ev, ok, err := tx.FindAction(ctx, id, kind, action, since)
			return found{ev, ok}, err
		})
	}
	longAgo := t0.Add(-time.Hour)

	got := find("busy", state.KindPrompt, "m-1", longAgo)
	require.True(t, got.ok)
	require.Equal(t, "first, again", got.ev.Text, "the newest of the two")
	require.Equal(t, uint64(304), got.ev.Seq)
	require.Equal(t, "user:alice", got.ev.From)
	require.True(t, t0.Add(3*time.Minute).Equal(got.ev.At))
	tail := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "busy", 303, 1) })
	require.Equal(t, tail[0], got.ev, "the event as Events reads it")

	got = find("busy", state.KindMessage, "m-2", longAgo)
	require.True(t, got.ok)
	require.Equal(t, uint64(303), got.ev.Seq)

	for name, c := range map[string]struct {
		kind   state.EventKind
		action string
		since  time.Time
	}{
		"another kind":                  {state.KindMessage, "m-1", longAgo},
		"a lifecycle event's action":    {state.KindPrompt, "m-3", longAgo},
		"no such id":                    {state.KindPrompt, "m-9", longAgo},
		"older than since":              {state.KindMessage, "m-2", t0.Add(2*time.Minute + time.Second)},
		"a prefix of an id":             {state.KindPrompt, "m-", longAgo},
		"since after every event":       {state.KindPrompt, "m-1", t0.Add(time.Hour)},
		"an id only agent lines repeat": {state.KindPrompt, `"m-1"`, longAgo},
	} {
		require.False(t, find("busy", c.kind, c.action, c.since).ok, name)
	}
	// Older than since, the newer of the two: found; the older alone is not.
	got = find("busy", state.KindPrompt, "m-1", t0.Add(2*time.Minute))
	require.True(t, got.ok)
	require.Equal(t, uint64(304), got.ev.Seq)
	require.False(t, find("quiet", state.KindPrompt, "m-1", longAgo).ok, "an empty log")

	_, _, err := viewErr(s, func(ctx context.Context, tx state.Tx) (state.Event, bool, error) {
		return tx.FindAction(ctx, "ghost", state.KindPrompt, "m-1", longAgo)
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	_, _, err = viewErr(s, func(ctx context.Context, tx state.Tx) (state.Event, bool, error) {
		return tx.FindAction(ctx, "busy", state.KindAgent, "m-1", longAgo)
	})
	var inv *state.InvalidError
	require.True(t, errors.As(err, &inv), "another kind: %v", err)

	// Inside an Update: its own appends are found, and what it appended
	// after the committed ones is read first.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "quiet", []state.Event{{Kind: state.KindMessage, Action: "m-4", Text: "new", At: t0.Add(5 * time.Minute)}}); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "busy", append(agents(3, t0), state.Event{Kind: state.KindPrompt, Action: "m-1", Text: "third", At: t0.Add(6 * time.Minute)})); err != nil {
			return err
		}
		ev, ok, err := tx.FindAction(ctx, "quiet", state.KindMessage, "m-4", longAgo)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "new", ev.Text)
		ev, ok, err = tx.FindAction(ctx, "busy", state.KindPrompt, "m-1", longAgo)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "third", ev.Text)
		ev, ok, err = tx.FindAction(ctx, "busy", state.KindMessage, "m-2", longAgo)
		require.NoError(t, err)
		require.True(t, ok, "a committed one behind the transaction's own")
		require.Equal(t, uint64(303), ev.Seq)
		return nil
	}))
}

// viewErr runs fn in a View and returns what it returned, error included.
func viewErr[A, B any](s state.Store, fn func(context.Context, state.Tx) (A, B, error)) (A, B, error) {
	var (
		a   A
		b   B
		err error
	)
	ctx := context.Background()
	verr := s.View(ctx, func(tx state.Tx) error {
		a, b, err = fn(ctx, tx)
		return nil
	})
	if verr != nil {
		return a, b, verr
	}
	return a, b, err
}
