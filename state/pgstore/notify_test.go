package pgstore_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storetest"
)

// next receives from ch, failing the test when nothing comes (a bound on a
// hang, not a timing assertion).
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id, ok := <-ch:
		require.True(t, ok, "the watch ended")
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no notification")
		return ""
	}
}

func appendTo(t *testing.T, s state.Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, id, prompts(id, n))
		return err
	}))
}

// TestWatchSeesOtherConnections: a line committed through another store
// handle (its own pool) or another process wakes the listener, naming the
// spore; a rolled-back append wakes nobody.
func TestWatchSeesOtherConnections(t *testing.T) {
	s, url := newStoreURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other, err := pgstore.Open(ctx, url, pgstore.Options{})
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error {
		for _, id := range append([]string{"x", "y"}, helperSpores...) {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))

	ch, err := s.Watch(ctx)
	require.NoError(t, err)

	// Rolled back: no notification. Then committed: its id comes first.
	boom := errors.New("roll back")
	require.ErrorIs(t, other.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "x", prompts("x", 1)); err != nil {
			return err
		}
		return boom
	}), boom)
	appendTo(t, other, "y", 3)
	require.Equal(t, "y", next(t, ch))

	// Another process: one writer appending to a, b and c.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=0", helperURLEnv+"="+url)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "writer: %s", out)
	seen := map[string]int{}
	for range helperRounds {
		seen[next(t, ch)]++
	}
	require.Len(t, seen, len(helperSpores), "every spore the writer appended to: %v", seen)
	for _, id := range helperSpores {
		require.Positive(t, seen[id], id)
	}

	// A deleted spore's watchers learn it at once too.
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "y") }))
	require.Equal(t, "y", next(t, ch))

	// Ending ctx ends the watch.
	cancel()
	for range ch {
	}
}

// TestWatchReconnects: when the listener's backend is terminated, it
// connects again, says so with "", and goes on delivering.
func TestWatchReconnects(t *testing.T) {
	s, url := newStoreURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("a")) }))
	ch, err := s.Watch(ctx)
	require.NoError(t, err)
	appendTo(t, s, "a", 1)
	require.Equal(t, "a", next(t, ch))

	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	for round := range 2 {
		var killed int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+pgstore.EventsChannel+`' AND pid <> pg_backend_pid()`).Scan(&killed))
		require.Equal(t, 1, killed, "round %d: the listener's backend", round)
		require.Equal(t, "", next(t, ch), "round %d: a reconnect says any spore may have grown", round)
		appendTo(t, s, "a", 1)
		require.Equal(t, "a", next(t, ch), "round %d", round)
	}
}

// TestWatchNeedsAServer: the first connection failing is Watch's error.
func TestWatchNeedsAServer(t *testing.T) {
	s, _ := newStoreURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Watch(ctx)
	require.Error(t, err)
}
