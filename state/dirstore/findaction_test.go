package dirstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// findActionLog makes a spore whose log is a lifecycle event (seq 1), a
// prompt with id m-1 (seq 2) and 20 agent lines (seq 3–22), and returns
// the store and the log's path.
func findActionLog(t *testing.T) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t, Options{})
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	evs := []state.Event{{Kind: state.KindLifecycle, Action: "created", At: at}, {Kind: state.KindPrompt, Action: "m-1", Text: "hello", At: at.Add(time.Second)}}
	for i := range 20 {
		evs = append(evs, state.Event{Kind: state.KindAgent, At: at, BridgeSeq: uint64(i + 1), Line: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("a")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "a", evs)
		return err
	}))
	logs, err := filepath.Glob(filepath.Join(s.root, "events", "a.*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	return s, logs[0]
}

func findM1(s *Store) (state.Event, bool, error) {
	var (
		ev    state.Event
		found bool
	)
	err := s.View(context.Background(), func(tx state.Tx) error {
		var err error
		ev, found, err = tx.FindAction(context.Background(), "a", state.KindPrompt, "m-1", time.Time{})
		return err
	})
	return ev, found, err
}

// reopen is a fresh handle on s's directory, as the next command has.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	o, err := Open(context.Background(), s.root, Options{})
	require.NoError(t, err)
	return o
}

// TestFindActionReadsTheEventsItDecodes: a damaged prompt line on the way
// is corruption of that line (its checksum is checked, as every read's);
// a damaged agent line is passed over unread, as a read that does not
// reach it would (format §9). Each lookup is a fresh handle's.
func TestFindActionReadsTheEventsItDecodes(t *testing.T) {
	s, log := findActionLog(t)
	ev, found, err := findM1(s)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(2), ev.Seq)

	// An agent line's payload, past the kind: not read.
	flipByte(t, log, endOfLine(t, log, 10)-3)
	ev, found, err = findM1(reopen(t, s))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "hello", ev.Text)
	rep, err := s.Check(context.Background())
	require.NoError(t, err)
	require.False(t, rep.OK(), "check reads every line")

	// The prompt's line: corruption, naming the log and the line.
	flipByte(t, log, middleOfLine(t, log, 2))
	_, _, err = findM1(reopen(t, s))
	var ce *state.CorruptError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, 2, ce.Line)
	require.Contains(t, ce.File, "a.")
	require.Contains(t, err.Error(), "checksum")
}

// TestFindActionReadsEachLineOnce: a long-lived handle (serve's) reads a
// log's lines once: the next lookup reads only what was appended since,
// by any writer, and finds it; a line it read before is not read again
// (damage there goes unnoticed by it, and a fresh handle notices); a
// lookup further back than it read reads back again; a view of an older
// snapshot does not see what was appended after it.
func TestFindActionReadsEachLineOnce(t *testing.T) {
	ctx := context.Background()
	s, log := findActionLog(t)
	_, found, err := findM1(s)
	require.NoError(t, err)
	require.True(t, found)

	// Another process appends a message and more agent lines.
	other := reopen(t, s)
	at := time.Date(2026, 11, 1, 12, 5, 0, 0, time.UTC)
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "a", []state.Event{
			{Kind: state.KindMessage, Action: "m-2", Text: "later", At: at},
			{Kind: state.KindAgent, At: at, BridgeSeq: 99, Line: json.RawMessage(`{"n":99}`)},
		})
		return err
	}))
	find := func(s *Store, kind state.EventKind, action string, since time.Time) (state.Event, bool, error) {
		var (
			ev    state.Event
			found bool
		)
		err := s.View(ctx, func(tx state.Tx) error {
			var err error
			ev, found, err = tx.FindAction(ctx, "a", kind, action, since)
			return err
		})
		return ev, found, err
	}
	// Damage to the first prompt, which this handle read already.
	flipByte(t, log, middleOfLine(t, log, 2))
	ev, found, err := find(s, state.KindMessage, "m-2", at.Add(-time.Minute))
	require.NoError(t, err, "the lines read before are not read again")
	require.True(t, found)
	require.Equal(t, uint64(23), ev.Seq)
	_, _, err = find(reopen(t, s), state.KindMessage, "m-2", time.Time{})
	var ce *state.CorruptError
	require.True(t, errors.As(err, &ce), "a fresh handle reads back to the damage: %v", err)

	// Looking further back than the last lookup (its since) reads back
	// again, and meets the damage.
	_, _, err = find(s, state.KindPrompt, "m-1", time.Time{})
	require.True(t, errors.As(err, &ce), "read back again: %v", err)
	flipByte(t, log, middleOfLine(t, log, 2)) // repaired

	// A view that began before an append does not find what it added.
	require.NoError(t, s.View(ctx, func(old state.Tx) error {
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, "a", []state.Event{{Kind: state.KindMessage, Action: "m-3", At: at.Add(time.Minute)}})
			return err
		}))
		_, found, err := find(s, state.KindMessage, "m-3", at)
		require.NoError(t, err)
		require.True(t, found, "a new view finds it")
		_, found, err = old.FindAction(ctx, "a", state.KindMessage, "m-3", at)
		require.NoError(t, err)
		require.False(t, found, "the older snapshot's log ends before it")
		_, found, err = old.FindAction(ctx, "a", state.KindMessage, "m-2", at)
		require.NoError(t, err)
		require.True(t, found)
		return nil
	}))
}

// TestFindActionNoticesAShortLog: a log with fewer lines than its head
// says is corruption, not "not found".
func TestFindActionNoticesAShortLog(t *testing.T) {
	s, log := findActionLog(t)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	// Drop line 1 (the lifecycle event): line 2 now sits where seq 1 belongs.
	i := 0
	for b[i] != '\n' {
		i++
	}
	require.NoError(t, os.WriteFile(log, b[i+1:], 0o600))
	_, _, err = findM1(s)
	var ce *state.CorruptError
	require.True(t, errors.As(err, &ce), "%v", err)
}

// endOfLine is the offset of line n's LF (1-based).
func endOfLine(t *testing.T, p string, n int) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	at := -1
	for range n {
		i := bytes.IndexByte(b[at+1:], '\n')
		require.GreaterOrEqual(t, i, 0)
		at += i + 1
	}
	return at
}
