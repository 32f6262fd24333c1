package local

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A start or stop waits for the spore's lock as long as its context
// allows, and then returns the context's error itself.
func TestLockWaitsForTheContext(t *testing.T) {
	r, err := New(Config{Root: t.TempDir(), Binary: "unused"})
	require.NoError(t, err)
	unlock, err := r.lock(t.Context(), "a")
	require.NoError(t, err)

	start := time.Now() // before the deadline is set, which counts from then
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = r.lock(ctx, "a")
	require.Equal(t, context.DeadlineExceeded, err)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	other, err := r.lock(t.Context(), "b")
	require.NoError(t, err, "spores lock one by one")
	other()

	got := make(chan error, 1)
	go func() {
		u, err := r.lock(t.Context(), "a")
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after unlock")
	}
}

// A lock held too long (a hung command) gives a clear error after
// LockTimeout instead of a command that hangs.
func TestLockWaitIsBounded(t *testing.T) {
	r, err := New(Config{Root: t.TempDir(), Binary: "unused", LockTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	unlock, err := r.lock(t.Context(), "a")
	require.NoError(t, err)
	defer unlock()
	_, err = r.lock(t.Context(), "a")
	require.ErrorContains(t, err, "spore a is busy")
	require.ErrorContains(t, err, "a.lock")
}
