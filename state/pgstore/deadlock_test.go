package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/storetest"
)

// newLoggedStore is a store on a fresh database whose Debug log (retries
// and restarts) the test reads, with spores ids already created.
func newLoggedStore(t *testing.T, ids ...string) (*pgstore.Store, string, *testutil.Buffer) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, _, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{Logger: logger, MaxConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range ids {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))
	return s, url, logs
}

// hold is the pause between a transaction's first and second lock, so
// two transactions started together cross.
const hold = 15 * time.Millisecond

func msg(text string) []state.Event {
	return []state.Event{{Kind: state.KindMessage, From: "spore:worker", Text: text}}
}

// The raw shapes of the two transactions of issue 15 that crossed: a
// tell from worker to arch (outbox.SendOnce: the target first, then
// the sender's log) and the summons a pass raises in the commit of
// worker's lines (reconcile.commit then Summon: the ingested spore
// first, then the [arch]). "arch" sorts before "worker", so the summons
// comes to its second lock out of order.
func tellShape(ctx context.Context, round int) func(state.Tx) error {
	return func(tx state.Tx) error {
		if _, err := tx.Spore(ctx, "arch"); err != nil {
			return err
		}
		if _, err := tx.Outbox(ctx, "arch"); err != nil {
			return err
		}
		time.Sleep(hold)
		if _, err := tx.Tail(ctx, "worker", 64); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "worker", []state.Event{{Kind: state.KindLifecycle, Action: "sent", Text: fmt.Sprintf("tell %d", round)}}); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "arch", msg(fmt.Sprintf("tell %d", round))); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: fmt.Sprintf("tell-%d", round), Spore: "arch", From: "spore:worker", Text: "t"})
		return err
	}
}

func summonsShape(ctx context.Context, round int) func(state.Tx) error {
	return func(tx state.Tx) error {
		w, err := tx.Spore(ctx, "worker")
		if err != nil {
			return err
		}
		w.Restarts++
		if _, err := storetest.Put(ctx, tx, w); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "worker", msg(fmt.Sprintf("lines %d", round))); err != nil {
			return err
		}
		time.Sleep(hold)
		a, err := tx.Spore(ctx, "arch")
		if err != nil {
			return err
		}
		a.Restarts++
		if _, err := storetest.Put(ctx, tx, a); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "arch", msg(fmt.Sprintf("summons %d", round))); err != nil {
			return err
		}
		_, err = tx.Enqueue(ctx, state.OutboxEntry{ID: fmt.Sprintf("summons-%d", round), Spore: "arch", From: "sporectl:summons", Text: "s"})
		return err
	}
}

// TestCrossedLocksDoNotDeadlock: pairs of Updates that take the same
// locks in opposite orders, started together round after round. Each
// would deadlock on a store that locks in the caller's order (Postgres
// then aborts one with 40P01); the store's one lock order makes the later
// one wait instead. Every Update succeeds, no attempt is rolled back by
// a conflict (the log has no retry), the crossing did happen (the log
// has restarts), and every write of every round is there once.
func TestCrossedLocksDoNotDeadlock(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		rounds      int
		first, then func(ctx context.Context, round int) func(state.Tx) error
		check       func(t *testing.T, s state.Store, rounds int)
	}{
		{
			name: "a tell and a summons", rounds: 40, first: tellShape, then: summonsShape,
			check: func(t *testing.T, s state.Store, rounds int) {
				arch, out := readAll(t, s, "arch")
				worker, _ := readAll(t, s, "worker")
				require.Len(t, arch, 2*rounds)
				require.Len(t, worker, 2*rounds)
				require.Len(t, out, 2*rounds)
				var sp state.Spore
				require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; sp, err = tx.Spore(ctx, "arch"); return err }))
				require.Equal(t, rounds, sp.Restarts, "every summons' read-modify-write landed")
			},
		},
		{
			// A wide Update (a reconcile pass: every row, in id order)
			// against one that holds a late row and then reads an early
			// one.
			name: "every spore against one late then one early", rounds: 15,
			first: func(ctx context.Context, round int) func(state.Tx) error {
				return func(tx state.Tx) error {
					if _, err := tx.Heads(ctx); err != nil {
						return err
					}
					time.Sleep(hold)
					_, err := tx.Append(ctx, "worker", msg(fmt.Sprintf("wide %d", round)))
					return err
				}
			},
			then: func(ctx context.Context, round int) func(state.Tx) error {
				return func(tx state.Tx) error {
					if _, err := tx.Append(ctx, "worker", msg(fmt.Sprintf("late %d", round))); err != nil {
						return err
					}
					time.Sleep(hold)
					_, err := tx.Append(ctx, "arch", msg(fmt.Sprintf("early %d", round)))
					return err
				}
			},
			check: func(t *testing.T, s state.Store, rounds int) {
				arch, _ := readAll(t, s, "arch")
				worker, _ := readAll(t, s, "worker")
				require.Len(t, arch, rounds)
				require.Len(t, worker, 2*rounds)
			},
		},
		{
			// The settings row and a spore row, and the spore-set lock a
			// create takes, in both orders.
			name: "settings and the spore set against a spore row", rounds: 15,
			first: func(ctx context.Context, round int) func(state.Tx) error {
				return func(tx state.Tx) error {
					st, err := tx.Settings(ctx)
					if err != nil {
						return err
					}
					if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("new-%02d", round))); err != nil {
						return err
					}
					time.Sleep(hold)
					if _, err := tx.Append(ctx, "worker", msg(fmt.Sprintf("created %d", round))); err != nil {
						return err
					}
					return tx.PutSettings(ctx, st)
				}
			},
			then: func(ctx context.Context, round int) func(state.Tx) error {
				return func(tx state.Tx) error {
					if _, err := tx.Append(ctx, "worker", msg(fmt.Sprintf("spore first %d", round))); err != nil {
						return err
					}
					time.Sleep(hold)
					st, err := tx.Settings(ctx)
					if err != nil {
						return err
					}
					if err := tx.PutSettings(ctx, st); err != nil {
						return err
					}
					return tx.DeleteSpore(ctx, fmt.Sprintf("gone-%02d", round))
				}
			},
			check: func(t *testing.T, s state.Store, rounds int) {
				worker, _ := readAll(t, s, "worker")
				require.Len(t, worker, 2*rounds)
				var all []state.Spore
				require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; all, err = tx.Spores(ctx); return err }))
				require.Len(t, all, 2+rounds, "arch, worker and one new spore a round; every gone-NN deleted")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids := []string{"arch", "worker"}
			for r := range tc.rounds {
				ids = append(ids, fmt.Sprintf("gone-%02d", r))
			}
			s, _, logs := newLoggedStore(t, ids...)
			var failed []error
			for r := 0; r < tc.rounds && len(failed) == 0; r++ {
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, shape := range []func(context.Context, int) func(state.Tx) error{tc.first, tc.then} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[i] = s.Update(ctx, shape(ctx, r))
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						failed = append(failed, fmt.Errorf("round %d: %w", r, err))
					}
				}
			}
			require.Empty(t, failed, "no Update fails")
			require.NotContains(t, logs.String(), "rolled back by a conflict", "no attempt was rolled back by a deadlock")
			require.Contains(t, logs.String(), "restarted to take its locks in order", "the transactions did cross")
			tc.check(t, s, tc.rounds)
			requireClean(t, s)
		})
	}
}

// TestDeadlockIsRetried: an Update deadlocks, once, with a transaction
// outside the store that locks in the opposite order. Postgres aborts
// the Update's attempt (it waited first, so its deadlock check runs
// first); the store runs fn again, and the caller sees success.
func TestDeadlockIsRetried(t *testing.T) {
	ctx := context.Background()
	s, url, logs := newLoggedStore(t, "a", "b")
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer other.Close(ctx)
	otherTx, err := other.Begin(ctx)
	require.NoError(t, err)
	_, err = otherTx.Exec(ctx, `SELECT 1 FROM sporectl.spores WHERE id = 'b' FOR UPDATE`)
	require.NoError(t, err)

	holdsA := make(chan struct{})
	otherDone := make(chan error, 1)
	go func() {
		<-holdsA
		// Let the Update wait for b first.
		time.Sleep(200 * time.Millisecond)
		_, err := otherTx.Exec(ctx, `SELECT 1 FROM sporectl.spores WHERE id = 'a' FOR UPDATE`)
		if err == nil {
			err = otherTx.Commit(ctx)
		}
		otherDone <- err
	}()
	runs := 0
	err = s.Update(ctx, func(tx state.Tx) error {
		runs++
		if _, err := tx.Append(ctx, "a", msg(fmt.Sprintf("run %d", runs))); err != nil {
			return err
		}
		if runs == 1 {
			close(holdsA)
		}
		_, err := tx.Append(ctx, "b", msg(fmt.Sprintf("run %d", runs)))
		return err
	})
	require.NoError(t, err, "the caller never sees the deadlock")
	require.NoError(t, <-otherDone, "the other transaction got its locks once the Update's attempt was aborted")
	require.Equal(t, 2, runs, "fn ran again after the deadlock")
	require.Contains(t, logs.String(), "sqlstate=40P01")
	a, _ := readAll(t, s, "a")
	b, _ := readAll(t, s, "b")
	require.Equal(t, []string{"run 2"}, texts(a), "nothing of the aborted attempt was kept")
	require.Equal(t, []string{"run 2"}, texts(b))
}

// TestConflictGivesUp: a transaction that fails with a conflict on
// every attempt is tried a bounded number of times; the caller then gets
// a store error (exit 6) that says the store was busy and that nothing
// was changed, without the server's SQL message, and nothing of any
// attempt is kept.
func TestConflictGivesUp(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		code, says string
	}{
		{"40P01", "the store was busy (deadlock), nothing was changed; try again"},
		{"40001", "the store was busy (conflicting transactions), nothing was changed; try again"},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			s, _, _ := newLoggedStore(t, "one")
			runs := 0
			start := time.Now()
			err := s.Update(ctx, func(tx state.Tx) error {
				runs++
				if _, err := tx.Append(ctx, "one", msg("doomed")); err != nil {
					return err
				}
				return fmt.Errorf("append: %w", &state.UnavailableError{Op: "append", Err: &pgconn.PgError{
					Severity: "ERROR", Code: tc.code, Message: "deadlock detected",
					Detail: "Process 4242 waits for ShareLock on transaction 77; blocked by process 4343.",
				}})
			})
			require.Equal(t, 5, runs, "bounded: five tries")
			require.Less(t, time.Since(start), 5*time.Second)
			var un *state.UnavailableError
			require.ErrorAs(t, err, &un, "a store error: exit 6")
			require.ErrorContains(t, err, tc.says)
			for _, raw := range []string{"SQLSTATE", "Process 4242", "deadlock detected", "ShareLock"} {
				require.NotContains(t, err.Error(), raw, "no SQL error is printed")
			}
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr, "the driver's error stays in the chain")
			evs, _ := readAll(t, s, "one")
			require.Empty(t, evs)
		})
	}
}

// TestRetryLogsOnlyWithVerbose: the retries of an unreachable server are
// logged at Info, which sporectl shows only with -v (its logger is at
// Warn otherwise, cmd/cli/factory.go).
func TestRetryLogsOnlyWithVerbose(t *testing.T) {
	const attempts = 3
	tests := []struct {
		level   slog.Level
		retries int
	}{
		{slog.LevelWarn, 0},
		{slog.LevelInfo, attempts - 1},
	}
	for _, tc := range tests {
		t.Run(tc.level.String(), func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level}))
			// Port 1 (tcpmux) has no listener on any machine this runs on.
			_, err := pgstore.Open(context.Background(), "postgres://u:not-the-password@127.0.0.1:1/x?sslmode=disable",
				pgstore.Options{Logger: logger, ConnectAttempts: attempts, ConnectTimeout: time.Second})
			var un *state.UnavailableError
			require.ErrorAs(t, err, &un)
			require.Equal(t, tc.retries, strings.Count(logs.String(), "retrying"), "logs: %s", logs.String())
		})
	}
}
