package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storetest"
)

// statements records what a store sends, through Options.Tracer: each
// statement's first word, lower case ("begin", "select", "rollback"…).
type statements struct {
	mu   sync.Mutex
	sent []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	word, _, _ := strings.Cut(strings.TrimSpace(d.SQL), " ")
	s.sent = append(s.sent, strings.ToLower(word))
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

// TestAViewAsksOnceAboutASpore: inside one View a spore found once is not
// asked about again: its record brings its head, and a read that finds
// none of its rows (an empty outbox, an id not in its log) checks that
// the spore exists once. A spore that does not exist is still not found,
// and what the View answers is what separate Views answer.
func TestAViewAsksOnceAboutASpore(t *testing.T) {
	ctx := context.Background()
	s, url := newStoreURL(t)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("a")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "a", prompts("p", 3))
		return err
	}))
	var sent statements
	traced, err := pgstore.Open(ctx, url, pgstore.Options{Tracer: &sent})
	require.NoError(t, err)
	t.Cleanup(func() { _ = traced.Close() })
	sent.take() // Open's own
	since := time.Now().Add(-time.Hour)

	var head state.SporeHead
	require.NoError(t, traced.View(ctx, func(tx state.Tx) error {
		if _, err := tx.Spore(ctx, "a"); err != nil {
			return err
		}
		var err error
		if head, err = tx.Head(ctx, "a"); err != nil {
			return err
		}
		if out, err := tx.Outbox(ctx, "a"); err != nil || len(out) != 0 {
			t.Errorf("outbox of a: %v, %v", out, err)
		}
		if _, found, err := tx.FindAction(ctx, "a", state.KindMessage, "m-none", since); err != nil || found {
			t.Errorf("find m-none in a: %v, %v", found, err)
		}
		return nil
	}))
	require.Equal(t, []string{"begin", "select", "select", "select", "rollback"}, sent.take(),
		"the record (with its head), the outbox (with the existence check), the log's index probe")
	require.Equal(t, uint64(3), head.LastSeq)

	// Asked the other way round: the first empty read checks, the next
	// does not; Head, not brought by a record, asks once.
	require.NoError(t, traced.View(ctx, func(tx state.Tx) error {
		for range 2 {
			if _, err := tx.Outbox(ctx, "a"); err != nil {
				return err
			}
			if h, err := tx.Head(ctx, "a"); err != nil || h != head {
				t.Errorf("head of a: %+v, %v; want %+v", h, err, head)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"begin", "select", "select", "select", "select", "rollback"}, sent.take(),
		"outbox and its existence check, head; then the outbox alone")

	require.NoError(t, traced.View(ctx, func(tx state.Tx) error {
		for range 2 {
			if _, err := tx.Outbox(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("outbox of nope: %v, want not found", err)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"begin", "select", "select", "select", "select", "rollback"}, sent.take(),
		"a spore not found is asked about each time")
}
