package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// racePair runs first, and once first is inside its transaction starts
// second; first holds its transaction a moment so second would interleave
// if locking let it.
func racePair(t *testing.T, s state.Store, first, second func(state.Tx) error) {
	t.Helper()
	racePairHolding(t, s, func() { time.Sleep(300 * time.Millisecond) }, first, second)
}

// racePairHolding is racePair with first holding its transaction until
// hold returns.
func racePairHolding(t *testing.T, s state.Store, hold func(), first, second func(state.Tx) error) {
	t.Helper()
	ctx := context.Background()
	inside := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = s.Update(ctx, func(tx state.Tx) error {
			if err := first(tx); err != nil {
				return err
			}
			close(inside)
			hold()
			return nil
		})
	}()
	go func() {
		defer wg.Done()
		<-inside
		errs[1] = s.Update(ctx, second)
	}()
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
}

// TestNoLostUpdate: two read-modify-write Updates of one spore serialize;
// both increments land.
func TestNoLostUpdate(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	bump := func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		sp.Restarts++
		_, err = storetest.Put(ctx, tx, sp)
		return err
	}
	racePair(t, s, bump, bump)
	var got state.Spore
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; got, err = tx.Spore(ctx, "one"); return err }))
	require.Equal(t, 2, got.Restarts)
}

// TestNoWriteSkewOnSporeSet: "create an arch unless one exists", run by
// two Updates at once, creates exactly one.
func TestNoWriteSkewOnSporeSet(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	createArchUnlessAny := func(name string) func(state.Tx) error {
		return func(tx state.Tx) error {
			all, err := tx.Spores(ctx)
			if err != nil {
				return err
			}
			for _, sp := range all {
				if sp.Rank == state.RankArch {
					return nil
				}
			}
			sp := storetest.Spore(name)
			sp.Rank = state.RankArch
			return tx.CreateSpore(ctx, sp)
		}
	}
	racePair(t, s, createArchUnlessAny("arch-1"), createArchUnlessAny("arch-2"))
	var all []state.Spore
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; all, err = tx.Spores(ctx); return err }))
	var names []string
	for _, sp := range all {
		names = append(names, fmt.Sprintf("%s:%s", sp.ID, sp.Rank))
	}
	require.Equal(t, []string{"arch-1:arch"}, names)
}

// TestStaleWriteWaitsForTheWish: a PutStatus or PutWish made from a read
// of generation 0 (outside its transaction: nothing locked the row) meets
// a wish at generation 1 that another Update holds uncommitted. It waits
// for that Update and is judged against what it committed: refused as
// stale, and the wish is kept.
func TestStaleWriteWaitsForTheWish(t *testing.T) {
	tests := map[string]func(ctx context.Context, tx state.Tx, read state.Spore) error{
		"status": func(ctx context.Context, tx state.Tx, read state.Spore) error {
			st := read.Status
			st.Restarts = 9
			return tx.PutStatus(ctx, "one", st)
		},
		"wish": func(ctx context.Context, tx state.Tx, read state.Spore) error {
			w := read.Wish
			w.Desired, w.Generation = state.Stopped, read.Generation+1
			return tx.PutWish(ctx, w)
		},
	}
	for name, write := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			ctx := context.Background()
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
			var read state.Spore
			require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; read, err = tx.Spore(ctx, "one"); return err }))

			inside := make(chan struct{})
			var wishErr error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				wishErr = s.Update(ctx, func(tx state.Tx) error {
					w := read.Wish
					w.Desired, w.Generation = state.Running, 1
					if err := tx.PutWish(ctx, w); err != nil {
						return err
					}
					close(inside)
					time.Sleep(300 * time.Millisecond)
					return nil
				})
			}()
			<-inside
			err := s.Update(ctx, func(tx state.Tx) error { return write(ctx, tx, read) })
			wg.Wait()
			require.NoError(t, wishErr)
			var stale *state.StaleError
			require.ErrorAs(t, err, &stale)
			require.Equal(t, name, stale.What)
			require.Equal(t, uint64(1), stale.Stored)

			var got state.Spore
			require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; got, err = tx.Spore(ctx, "one"); return err }))
			require.Equal(t, state.Running, got.Desired, "the committed wish is kept")
			require.Zero(t, got.Restarts)
		})
	}
}

// TestSettingsReadersDoNotWait: an Update that read the settings holds
// them against writers only; another Update that reads them goes on
// while the first is still open.
func TestSettingsReadersDoNotWait(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	read := func(tx state.Tx) error { _, err := tx.Settings(ctx); return err }
	// The first stays open until the second has committed.
	inside, finished := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		errs <- s.Update(ctx, func(tx state.Tx) error {
			if err := read(tx); err != nil {
				return err
			}
			close(inside)
			select {
			case <-finished:
				return nil
			case <-time.After(10 * time.Second):
				return fmt.Errorf("the second reader waited for the first")
			}
		})
	}()
	<-inside
	errs <- s.Update(ctx, read)
	close(finished)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}

// TestNoLostSettingsUpdate: two read-modify-writes of the settings at
// once both land: readers share the row, and a writer that read it
// waits for the other readers (after a restart) rather than writing
// over what they read.
func TestNoLostSettingsUpdate(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	bump := func(tx state.Tx) error {
		// A spore row first, as a tell holds its target's: the
		// settings then come out of order.
		if _, err := tx.Spore(ctx, "one"); err != nil {
			return err
		}
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		c := st.Colony("lab")
		c.Budget.TokensPerDay++
		return tx.PutSettings(ctx, st.WithColony("lab", c))
	}
	for range 3 {
		racePair(t, s, bump, bump)
	}
	var got state.Settings
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; got, err = tx.Settings(ctx); return err }))
	require.Equal(t, int64(6), got.Colony("lab").Budget.TokensPerDay)
}

// TestLockSporesTakesThemInOrder: an Update that names the spores it will
// write (LockSpores) waits for a late one held elsewhere in the lock
// order instead of holding an early one and restarting; without it the
// same writes cross and restart.
func TestLockSporesTakesThemInOrder(t *testing.T) {
	ctx := context.Background()
	for _, lockFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("LockSpores=%v", lockFirst), func(t *testing.T) {
			s, url, logs := newLoggedStore(t, "a", "z")
			appendTo := func(tx state.Tx, id string) error {
				_, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Text: "x"}})
				return err
			}
			// First holds "a" until second waits for a lock: second
			// reaches "a" only after its own start and its append to "z",
			// which a loaded machine can stretch past any fixed pause.
			untilWaiting := func() { waitForALockWait(t, url) }
			racePairHolding(t, s, untilWaiting, func(tx state.Tx) error { return appendTo(tx, "a") }, func(tx state.Tx) error {
				if lockFirst {
					if err := tx.LockSpores(ctx, []string{"z", "a", "missing", "z"}); err != nil {
						return err
					}
				}
				if err := appendTo(tx, "z"); err != nil {
					return err
				}
				return appendTo(tx, "a")
			})
			restarted := strings.Contains(logs.String(), "restarted to take its locks in order")
			require.Equal(t, !lockFirst, restarted, "logs: %s", logs.String())
			for id, n := range map[string]int{"a": 2, "z": 1} {
				var h state.SporeHead
				require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; h, err = tx.Head(ctx, id); return err }))
				require.Equal(t, uint64(n), h.LastSeq, id)
			}
		})
	}
}

// waitForALockWait returns once a backend of url's database waits for a
// lock (pg_stat_activity), or after 20 s, when the test's own assertions
// say what went wrong.
func waitForALockWait(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var waiting int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		require.NoError(t, err)
		if waiting > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
