package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storetest"
)

// statements records what a store sends, through Options.Tracer, a
// round trip at a time: each statement's first word, lower case
// ("select", "rollback"…), the statements of a batch joined by "+"
// ("begin+select").
type statements struct {
	mu   sync.Mutex
	sent []string
}

func firstWord(sql string) string {
	word, _, _ := strings.Cut(strings.TrimSpace(sql), " ")
	return strings.ToLower(word)
}

func (s *statements) record(words ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, strings.Join(words, "+"))
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.record(firstWord(d.SQL))
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var words []string
	for _, q := range d.Batch.QueuedQueries {
		words = append(words, firstWord(q.SQL))
	}
	s.record(words...)
	return ctx
}

func (s *statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

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
	require.Equal(t, []string{"begin+select", "select", "select", "rollback"}, sent.take(),
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
	require.Equal(t, []string{"begin+select", "select", "select", "select", "rollback"}, sent.take(),
		"outbox and its existence check, head; then the outbox alone")

	require.NoError(t, traced.View(ctx, func(tx state.Tx) error {
		for range 2 {
			if _, err := tx.Outbox(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("outbox of nope: %v, want not found", err)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select", "select", "select", "select", "rollback"}, sent.take(),
		"a spore not found is asked about each time")
}

// TestATransactionThatSendsNothingSendsNothing: BEGIN goes with a
// transaction's first statement, so a View or an Update whose fn reads
// nothing costs no round trip and takes no connection.
func TestATransactionThatSendsNothingSendsNothing(t *testing.T) {
	ctx := context.Background()
	_, url := newStoreURL(t)
	var sent statements
	traced, err := pgstore.Open(ctx, url, pgstore.Options{Tracer: &sent})
	require.NoError(t, err)
	t.Cleanup(func() { _ = traced.Close() })
	sent.take()

	require.NoError(t, traced.View(ctx, func(state.Tx) error { return nil }))
	require.NoError(t, traced.Update(ctx, func(state.Tx) error { return nil }))
	wantErr := errors.New("fn's own")
	require.ErrorIs(t, traced.Update(ctx, func(state.Tx) error { return wantErr }), wantErr)
	require.Empty(t, sent.take())

	// One that reads sends BEGIN with its first statement.
	require.NoError(t, traced.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Settings(ctx)
		return err
	}))
	require.Equal(t, []string{"begin+select", "commit"}, sent.take())
}

// TestBrokenPooledConnectionsAreReplaced: every connection the pool
// holds is killed between transactions (as a server restart does). The
// next View and Update find out at their first statement, which went with
// BEGIN, so nothing of theirs has run: they reconnect and succeed, and say
// so in the log.
func TestBrokenPooledConnectionsAreReplaced(t *testing.T) {
	ctx := context.Background()
	_, url := newStoreURL(t)
	var logs testutil.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := pgstore.Open(ctx, url+"&application_name=sporectl-pooled", pgstore.Options{Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))

	// Fill the pool: four Views open at once hold four connections.
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			_ = s.View(ctx, func(tx state.Tx) error {
				_, err := tx.Spore(ctx, "one")
				<-hold
				return err
			})
		})
	}
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	countPooled := func() (n int) {
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'sporectl-pooled'`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return countPooled() >= 4 }, 10*time.Second, 10*time.Millisecond)
	close(hold)
	wg.Wait()

	var killed int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'sporectl-pooled'`).Scan(&killed))
	require.GreaterOrEqual(t, killed, 4)
	require.Eventually(t, func() bool { return countPooled() == 0 }, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err == nil && sp.ID != "one" {
			err = fmt.Errorf("read %q", sp.ID)
		}
		return err
	}), "the View reconnects")
	require.Contains(t, logs.String(), "postgres connection lost, reconnecting")
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "one", prompts("after", 1))
		return err
	}), "the Update runs once, on a live connection")
	evs, _ := readAll(t, s, "one")
	require.Equal(t, []string{"after 0"}, texts(evs))
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	password, _ := u.User.Password()
	require.NotContains(t, logs.String(), password, "no secret in the log")
}
