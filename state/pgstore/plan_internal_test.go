package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestLogReadsUseTheIndex asks the planner how it runs Events, Tail and
// FindAction on a table with many spores' logs: Events and Tail must be
// index scans of the primary key, FindAction one of the message ids'
// partial index, never a scan of the table, or their cost would grow with
// history (FindAction's with the agent lines after the message).
func TestLogReadsUseTheIndex(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, _, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Update(ctx, func(stx state.Tx) error {
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("s%02d", i)
			if err := stx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: id, Colony: "c", Rank: state.RankSpore, Desired: state.Paused}}); err != nil {
				return err
			}
			evs := make([]state.Event, 2000)
			for j := range evs {
				// Mostly agent lines, as a busy log is; every fourth a
				// prompt with its message id.
				evs[j] = state.Event{Kind: state.KindAgent, BridgeSeq: uint64(j + 1), Line: []byte(`{"n":1}`)}
				if j%4 == 0 {
					evs[j] = state.Event{Kind: state.KindPrompt, Action: fmt.Sprintf("m-%d", j), Text: "x"}
				}
			}
			if _, err := stx.Append(ctx, id, evs); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err = s.pool.Exec(ctx, `ANALYZE sporectl.events`)
	require.NoError(t, err)

	for _, q := range []struct {
		name string
		sql  string
		args []any
		want string
	}{
		{"Events", eventsQuery, []any{"s07", int64(1950), 50}, "Index Scan using events_pkey"},
		{"Events without limit", eventsQuery, []any{"s07", int64(1950), nil}, "Index Scan using events_pkey"},
		{"Tail", tailQuery, []any{"s07", 50}, "Index Scan Backward using events_pkey"},
		{"FindAction", findActionQuery, []any{"s07", "prompt", []byte("m-40"), time.Time{}}, "using events_message_action"},
	} {
		t.Run(q.name, func(t *testing.T) {
			rows, err := s.pool.Query(ctx, "EXPLAIN "+q.sql, q.args...)
			require.NoError(t, err)
			var plan []string
			for rows.Next() {
				var line string
				require.NoError(t, rows.Scan(&line))
				plan = append(plan, line)
			}
			require.NoError(t, rows.Err())
			text := strings.Join(plan, "\n")
			require.Contains(t, text, q.want, "plan:\n%s", text)
			require.NotContains(t, text, "Seq Scan", "plan:\n%s", text)
		})
	}
}

// TestPendingReadsOnlyTheOutbox: Pending's read, and the statement that
// locks the spores it returns inside an Update, cost what is queued: on a
// fleet of many spores with few queued entries neither scans the spores
// table nor touches events.
func TestPendingReadsOnlyTheOutbox(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, _, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Update(ctx, func(stx state.Tx) error {
		for i := 0; i < 5000; i++ {
			id := fmt.Sprintf("s%04d", i)
			if err := stx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: id, Colony: "c", Rank: state.RankSpore, Desired: state.Paused}}); err != nil {
				return err
			}
			if i%1000 == 0 {
				if _, err := stx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: id, From: "user:a", Text: "t"}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	_, err = s.pool.Exec(ctx, `ANALYZE sporectl.spores; ANALYZE sporectl.outbox`)
	require.NoError(t, err)
	for name, q := range map[string]string{"read": pendingQuery, "lock": pendingLockQuery} {
		t.Run(name, func(t *testing.T) {
			rows, err := s.pool.Query(ctx, "EXPLAIN "+q)
			require.NoError(t, err)
			var plan []string
			for rows.Next() {
				var line string
				require.NoError(t, rows.Scan(&line))
				plan = append(plan, line)
			}
			require.NoError(t, rows.Err())
			text := strings.Join(plan, "\n")
			require.NotContains(t, text, "Seq Scan on spores", "plan:\n%s", text)
			require.NotContains(t, text, "events", "plan:\n%s", text)
			t.Logf("%s plan:\n%s", name, text)
		})
	}
}
