package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/storetest"
)

// These tests stop the package's shared server; none of them (and no
// other test here) runs in parallel.

func prompts(prefix string, n int) []state.Event {
	evs := make([]state.Event, n)
	for i := range evs {
		evs[i] = state.Event{Kind: state.KindPrompt, From: "user:test", Text: fmt.Sprintf("%s %d", prefix, i)}
	}
	return evs
}

func readAll(t *testing.T, s state.Store, id string) ([]state.Event, []state.OutboxEntry) {
	t.Helper()
	ctx := context.Background()
	var evs []state.Event
	var out []state.OutboxEntry
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		var err error
		if evs, err = tx.Events(ctx, id, 0, 0); err != nil {
			return err
		}
		out, err = tx.Outbox(ctx, id)
		return err
	}))
	return evs, out
}

func requireClean(t *testing.T, s state.Store) {
	t.Helper()
	rep, err := s.Check(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "check: %v", rep.Problems)
}

// failMidTransaction runs an Update that writes, lets fault break the
// server or the session, then writes again; it returns Update's error.
func failMidTransaction(t *testing.T, s state.Store, fault func()) error {
	t.Helper()
	ctx := context.Background()
	return s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "one", prompts("doomed", 5)); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "doomed", Spore: "one", From: "user:x", Text: "t"}); err != nil {
			return err
		}
		fault()
		_, err := tx.Append(ctx, "one", prompts("after fault", 1))
		return err
	})
}

// TestServerCrashMidTransaction: the server dies (pg_ctl stop -m
// immediate, no checkpoint) while an Update is open. The Update fails with
// UnavailableError, nothing of it survives recovery, what committed before
// does, and the next Update works on the restarted server.
func TestServerCrashMidTransaction(t *testing.T) {
	srv := pgtest.Shared(t)
	s, _ := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("one")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "one", prompts("kept", 3))
		return err
	}))

	err := failMidTransaction(t, s, func() {
		require.NoError(t, srv.Stop("immediate"))
		require.NoError(t, srv.Start(ctx))
	})
	var un *state.UnavailableError
	require.ErrorAs(t, err, &un, "got %v", err)
	require.NotContains(t, err.Error(), srv.Password)
	t.Logf("error reported: %v", err)

	evs, out := readAll(t, s, "one")
	require.Equal(t, []string{"kept 0", "kept 1", "kept 2"}, texts(evs), "nothing of the failed transaction survives")
	require.Empty(t, out)
	var next []state.Event
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		next, err = tx.Append(ctx, "one", prompts("next", 1))
		return err
	}), "the next Update works")
	require.Equal(t, uint64(4), next[0].Seq)
	requireClean(t, s)
}

// TestBackendTerminated: pg_terminate_backend kills the session holding an
// open Update; same expectations as a server crash, without a restart.
func TestBackendTerminated(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	err := failMidTransaction(t, s, func() {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var killed int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'`).Scan(&killed))
		require.Equal(t, 1, killed, "exactly the Update's session is killed")
	})
	var un *state.UnavailableError
	require.ErrorAs(t, err, &un, "got %v", err)
	evs, out := readAll(t, s, "one")
	require.Empty(t, evs)
	require.Empty(t, out)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "one", prompts("next", 2)); return err }))
	evs, _ = readAll(t, s, "one")
	require.Equal(t, []uint64{1, 2}, seqsOf(evs))
	requireClean(t, s)
}

// TestCrashUnderLoad: a writer commits transactions of 10 events plus one
// outbox entry in a loop while the server crashes and comes back. Every
// Update that reported success is present in full; every transaction
// found (including any whose COMMIT acknowledgement was lost) is whole.
func TestCrashUnderLoad(t *testing.T) {
	srv := pgtest.Shared(t)
	s, _ := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))

	stop := make(chan struct{})
	var mu sync.Mutex
	var ok []int
	var failed []error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			err := s.Update(ctx, func(tx state.Tx) error {
				if _, err := tx.Append(ctx, "one", prompts(fmt.Sprintf("tx%d", n), 10)); err != nil {
					return err
				}
				_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: fmt.Sprintf("tx%d", n), Spore: "one", From: "user:x", Text: "t"})
				return err
			})
			mu.Lock()
			if err == nil {
				ok = append(ok, n)
			} else {
				failed = append(failed, err)
			}
			mu.Unlock()
		}
	}()
	// The crash comes once writes are committing, and the writer stops
	// once they commit again after the restart: counted, not timed, so a
	// loaded machine cannot make either stretch empty.
	committed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ok)
	}
	require.Eventually(t, func() bool { return committed() > 0 }, time.Minute, 10*time.Millisecond, "writes commit before the crash")
	require.NoError(t, srv.Stop("immediate"))
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, srv.Start(ctx))
	before := committed()
	require.Eventually(t, func() bool { return committed() > before }, time.Minute, 10*time.Millisecond, "writes commit again after the restart")
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, err := range failed {
		var un *state.UnavailableError
		require.ErrorAs(t, err, &un, "a failure during the crash is reported as unavailable: %v", err)
		require.NotContains(t, err.Error(), srv.Password)
	}
	evs, out := readAll(t, s, "one")
	perTx := map[string]int{}
	for _, e := range evs {
		perTx[strings.Fields(e.Text)[0]]++
	}
	queued := map[string]bool{}
	for _, e := range out {
		queued[e.ID] = true
	}
	for _, n := range ok {
		name := fmt.Sprintf("tx%d", n)
		require.Equal(t, 10, perTx[name], "committed %s is complete", name)
		require.True(t, queued[name], "committed %s kept its outbox entry", name)
	}
	for name, c := range perTx {
		require.Equal(t, 10, c, "transaction %s is whole", name)
		require.True(t, queued[name], "transaction %s is whole across tables", name)
	}
	require.Len(t, queued, len(perTx))
	require.GreaterOrEqual(t, len(perTx), len(ok))
	t.Logf("%d committed, %d failed during the crash, %d found after recovery", len(ok), len(failed), len(perTx))
	require.NotEmpty(t, ok)
	requireClean(t, s)
}

// TestContextCancelWhileWaitingForLock: an Update waiting for another
// writer's row lock gives up when its context ends.
func TestContextCancelWhileWaitingForLock(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx state.Tx) error {
			if _, err := tx.Append(ctx, "one", prompts("holder", 1)); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Update(short, func(tx state.Tx) error { _, err := tx.Append(short, "one", prompts("waiter", 1)); return err })
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	require.Less(t, time.Since(start), 5*time.Second)
	close(release)
	require.NoError(t, <-done)
	evs, _ := readAll(t, s, "one")
	require.Equal(t, []string{"holder 0"}, texts(evs))
}

// TestStatementTimeout: the server-side statement_timeout bounds a lock
// wait even with a context that never ends.
func TestStatementTimeout(t *testing.T) {
	_, url := newStoreURL(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{StatementTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx state.Tx) error {
			if _, err := tx.Append(ctx, "one", prompts("holder", 1)); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	err = s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "one", prompts("waiter", 1)); return err })
	var un *state.UnavailableError
	require.ErrorAs(t, err, &un, "got %v", err)
	require.Contains(t, err.Error(), "statement timeout")
	close(release)
	require.NoError(t, <-done)
}

func texts(evs []state.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Text
	}
	return out
}

func seqsOf(evs []state.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}
