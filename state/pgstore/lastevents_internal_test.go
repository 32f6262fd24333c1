package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// countingPgxTx counts the statements sent through a transaction, each
// one round trip.
type countingPgxTx struct {
	pgx.Tx
	n *atomic.Int64
}

func (c countingPgxTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n.Add(1)
	return c.Tx.Exec(ctx, sql, args...)
}

func (c countingPgxTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n.Add(1)
	return c.Tx.Query(ctx, sql, args...)
}

func (c countingPgxTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n.Add(1)
	return c.Tx.QueryRow(ctx, sql, args...)
}

func (c countingPgxTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.n.Add(1)
	return c.Tx.SendBatch(ctx, b)
}

// TestLastEventsOneQuery: LastEvents over 300 spores is one statement in
// a View, and in an Update one more that locks the rows (none once they
// are all held), where Tail(1) each was 300; its plan walks the events'
// primary key backwards, never a scan of the table.
func TestLastEventsOneQuery(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, _, err := Init(ctx, url, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	defer s.Close()
	const n = 300
	var ids []string
	require.NoError(t, s.Update(ctx, func(stx state.Tx) error {
		for i := range n + 10 {
			id := fmt.Sprintf("s%03d", i)
			if err := stx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: id, Colony: "c", Rank: state.RankSpore, Desired: state.Paused}}); err != nil {
				return err
			}
			if i >= n {
				continue // ten with an empty log
			}
			ids = append(ids, id)
			evs := make([]state.Event, 20)
			for j := range evs {
				evs[j] = state.Event{Kind: state.KindPrompt, Text: fmt.Sprintf("%s %d", id, j)}
			}
			if _, err := stx.Append(ctx, id, evs); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err = s.pool.Exec(ctx, `ANALYZE sporectl.events; ANALYZE sporectl.spores`)
	require.NoError(t, err)
	all := append(append([]string{}, ids...), "s305", "ghost")

	read := func(opts pgx.TxOptions, readOnly bool, lists ...[]string) ([]int64, map[string]state.Event) {
		pt, err := s.pool.BeginTx(ctx, opts)
		require.NoError(t, err)
		defer func() { _ = pt.Rollback(ctx) }()
		var count atomic.Int64
		tx := &tx{tx: countingPgxTx{Tx: pt, n: &count}, readOnly: readOnly}
		var per []int64
		var got map[string]state.Event
		for _, l := range lists {
			before := count.Load()
			got, err = tx.LastEvents(ctx, l)
			require.NoError(t, err)
			per = append(per, count.Load()-before)
		}
		return per, got
	}
	per, got := read(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, true, all)
	require.Equal(t, []int64{1}, per, "statements of LastEvents in a View")
	require.Len(t, got, n)
	for _, id := range ids {
		require.Equal(t, uint64(20), got[id].Seq, id)
		require.Equal(t, id+" 19", got[id].Text, id)
	}
	// A missing id holds no lock, so only a list of held spores is read
	// without locking again.
	per, got = read(pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, false, all, all, ids)
	require.Equal(t, []int64{2, 2, 1}, per, "statements of LastEvents in an Update: lock and read, then only read")
	require.Len(t, got, n)

	rows, err := s.pool.Query(ctx, "EXPLAIN "+lastEventsQuery, all)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "Index Scan Backward using events_pkey", "plan:\n%s", text)
	require.NotContains(t, text, "Seq Scan on events", "plan:\n%s", text)
}
