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
// asked about again: its record brings its head, its outbox read brings
// its existence and head, and a read that finds none of its rows (an id
// not in its log) checks that the spore exists once. A spore that does not exist is still not found,
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

	// Asked the other way round: the outbox's one statement brings the
	// spore's existence and head, and is kept: nothing is asked again.
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
	require.Equal(t, []string{"begin+select", "rollback"}, sent.take(),
		"the outbox with its spore's row; then nothing")

	require.NoError(t, traced.View(ctx, func(tx state.Tx) error {
		for range 2 {
			if _, err := tx.Outbox(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("outbox of nope: %v, want not found", err)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select", "select", "rollback"}, sent.take(),
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

// TestAnUpdateAsksOnceWhatItHolds: inside an Update what a lock holds
// still is read once — the settings (held FOR SHARE), a spore's head (its
// record and its appends bring it), its outbox (queued and dead letters
// in one statement) — and read again after the transaction's own write
// of it, which the second read shows.
func TestAnUpdateAsksOnceWhatItHolds(t *testing.T) {
	ctx := context.Background()
	s, url := newStoreURL(t)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("a")); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{Spore: "a", ID: "m-dead", From: "user:x", Text: "refused"}); err != nil {
			return err
		}
		if err := tx.Bury(ctx, "a", "m-dead", state.DeadLetter{Reason: "413: too large", At: time.Now()}); err != nil {
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

	require.NoError(t, traced.Update(ctx, func(tx state.Tx) error {
		for range 2 {
			if _, err := tx.Settings(ctx); err != nil {
				return err
			}
		}
		if _, err := tx.Spore(ctx, "a"); err != nil {
			return err
		}
		if h, err := tx.Head(ctx, "a"); err != nil || h.LastSeq != 3 {
			t.Errorf("head of a after its record: %+v, %v; want 3", h, err)
		}
		for range 2 {
			queued, err := tx.Outbox(ctx, "a")
			if err != nil || len(queued) != 0 {
				t.Errorf("outbox of a: %v, %v; want empty", queued, err)
			}
			dead, err := tx.DeadLetters(ctx, "a")
			if err != nil || len(dead) != 1 || dead[0].ID != "m-dead" || dead[0].Dead == nil || dead[0].Dead.Reason != "413: too large" {
				t.Errorf("dead letters of a: %+v, %v; want m-dead", dead, err)
			}
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select", "select", "select", "commit"}, sent.take(),
		"the settings, the record with its head, the outbox with its dead letters: each once")

	// The transaction's own writes are read back, as a read after its
	// commit finds them.
	var inTx []state.OutboxEntry
	require.NoError(t, traced.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Outbox(ctx, "a"); err != nil {
			return err
		}
		// A time with nanoseconds, in a zone: kept as stored.
		at := time.Date(2026, 12, 7, 13, 1, 2, 345678912, time.FixedZone("x", 3600))
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{Spore: "a", ID: "m-1", From: "user:x", Text: "hello", At: at, Wake: true}); err != nil {
			return err
		}
		if again, err := tx.Enqueue(ctx, state.OutboxEntry{Spore: "a", ID: "m-1", From: "user:y", Text: "other", At: at}); err != nil || again {
			t.Errorf("m-1 again: %v, %v; want not queued", again, err)
		}
		queued, err := tx.Outbox(ctx, "a")
		if err != nil || len(queued) != 1 || queued[0].ID != "m-1" {
			t.Errorf("outbox of a after Enqueue: %+v, %v; want m-1", queued, err)
		}
		inTx = queued
		if _, err := tx.Append(ctx, "a", prompts("q", 2)); err != nil {
			return err
		}
		if h, err := tx.Head(ctx, "a"); err != nil || h.LastSeq != 5 {
			t.Errorf("head of a after its append: %+v, %v; want 5", h, err)
		}
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		st.DefaultSpec.Image = "example.com/changed:1"
		if err := tx.PutSettings(ctx, st); err != nil {
			return err
		}
		if got, err := tx.Settings(ctx); err != nil || got.DefaultSpec.Image != st.DefaultSpec.Image {
			t.Errorf("settings after PutSettings: %q, %v; want %q", got.DefaultSpec.Image, err, st.DefaultSpec.Image)
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select", "select", "insert", "insert", "with", "select", "select", "insert", "select", "commit"}, sent.take(),
		"the row lock, outbox; enqueue (twice), the outbox known; append (its head with it); settings, its lock to write, put, settings again")
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		stored, err := tx.Outbox(ctx, "a")
		require.Equal(t, stored, inTx, "the outbox as the transaction knew it is the outbox as stored")
		return err
	}))
}

// TestLockSporesBringsTheRecords: the round trip that locks a writer's
// spores brings their records, heads and outboxes, so the reads after it
// send nothing; a record is given once, and read
// afresh after the transaction writes its row.
func TestLockSporesBringsTheRecords(t *testing.T) {
	ctx := context.Background()
	s, url := newStoreURL(t)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a", "b"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{Spore: "a", ID: "m-a", From: "user:x", Text: "queued for a"}); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "b", prompts("p", 2))
		return err
	}))
	var sent statements
	traced, err := pgstore.Open(ctx, url, pgstore.Options{Tracer: &sent})
	require.NoError(t, err)
	t.Cleanup(func() { _ = traced.Close() })
	sent.take() // Open's own

	require.NoError(t, traced.Update(ctx, func(tx state.Tx) error {
		if err := tx.LockSpores(ctx, []string{"b", "a", "missing"}); err != nil {
			return err
		}
		sp, err := tx.Spore(ctx, "b")
		if err != nil || sp.ID != "b" {
			t.Errorf("spore b after its lock: %+v, %v", sp.ID, err)
		}
		if h, err := tx.Head(ctx, "b"); err != nil || h.LastSeq != 2 {
			t.Errorf("head of b after its lock: %+v, %v; want 2", h, err)
		}
		if q, err := tx.Outbox(ctx, "a"); err != nil || len(q) != 1 || q[0].ID != "m-a" || q[0].Text != "queued for a" {
			t.Errorf("outbox of a after its lock: %+v, %v; want m-a", q, err)
		}
		if q, err := tx.Outbox(ctx, "b"); err != nil || len(q) != 0 {
			t.Errorf("outbox of b after its lock: %+v, %v; want empty", q, err)
		}
		if st, err := tx.Settings(ctx); err != nil || st.Runtime == "" {
			t.Errorf("settings after the lock: %+v, %v", st, err)
		}
		if _, err := tx.Spore(ctx, "missing"); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("spore missing: %v, want not found", err)
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select+select", "select", "select", "commit"}, sent.take(),
		"the locks with the records and the outboxes in one round trip; the settings; the missing spore asked about")

	require.NoError(t, traced.Update(ctx, func(tx state.Tx) error {
		if err := tx.LockSpores(ctx, []string{"a"}); err != nil {
			return err
		}
		sp, err := tx.Spore(ctx, "a")
		if err != nil {
			return err
		}
		st := sp.Status
		st.Restarts++
		if err := tx.PutStatus(ctx, "a", st); err != nil {
			return err
		}
		again, err := tx.Spore(ctx, "a")
		if err != nil || again.Restarts != st.Restarts {
			t.Errorf("spore a after PutStatus: restarts %d, %v; want %d", again.Restarts, err, st.Restarts)
		}
		return nil
	}))
	require.Equal(t, []string{"begin+select+select", "update", "select", "commit"}, sent.take(),
		"the lock with the record, the status, the record read again after it")
}

// TestAViewReadsARecordWithItsToken: inside a View a spore's record
// brings its token's hash, so the caller's authentication (its record,
// then its hash) is one statement; a spore with no token has none, and a
// hash set since is seen by the next View.
func TestAViewReadsARecordWithItsToken(t *testing.T) {
	ctx := context.Background()
	s, url := newStoreURL(t)
	_, hash, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a", "b"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return tx.SetTokenHash(ctx, "a", hash)
	}))
	var sent statements
	traced, err := pgstore.Open(ctx, url, pgstore.Options{Tracer: &sent})
	require.NoError(t, err)
	t.Cleanup(func() { _ = traced.Close() })
	sent.take() // Open's own

	read := func(id string) (got state.TokenHash, err error) {
		err = traced.View(ctx, func(tx state.Tx) error {
			if _, err := tx.Spore(ctx, id); err != nil {
				return err
			}
			got, err = tx.TokenHash(ctx, id)
			return err
		})
		return got, err
	}
	got, err := read("a")
	require.NoError(t, err)
	require.Equal(t, hash, got)
	require.Equal(t, []string{"begin+select", "rollback"}, sent.take(), "the record brings the hash")
	_, err = read("b")
	require.ErrorIs(t, err, state.ErrNotFound, "b has no token")
	sent.take()

	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "b", hash) }))
	got, err = read("b")
	require.NoError(t, err)
	require.Equal(t, hash, got, "set since")
}
