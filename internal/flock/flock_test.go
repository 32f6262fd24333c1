package flock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/flock"
)

// held takes the lock on path and releases it when the test ends (or
// earlier, through the returned func, which may be called again).
func held(t *testing.T, path string) (release func()) {
	t.Helper()
	r, err := flock.Acquire(t.Context(), path, time.Second)
	require.NoError(t, err)
	done := false
	release = func() {
		if !done {
			done = true
			r()
		}
	}
	t.Cleanup(release)
	return release
}

func TestAcquireCreatesThePrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release := held(t, path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	release()
	_, err = os.Stat(path)
	require.NoError(t, err, "release leaves the file for the next holder")
}

// A second Acquire (another open file, as another process would have)
// waits for the first holder and gets the lock once it is released.
func TestSecondAcquireWaitsForRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release := held(t, path)

	got := make(chan error, 1)
	go func() {
		r, err := flock.Acquire(t.Context(), path, 10*time.Second)
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("acquired a held lock (err %v)", err)
	case <-time.After(150 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after the holder released")
	}
}

func TestAcquireGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		timeout time.Duration
		want    error
		// at least and at most this long
		min, max time.Duration
	}{
		{"canceled", func(c context.Context) (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(c)
			time.AfterFunc(50*time.Millisecond, cancel)
			return c, cancel
		}, 10 * time.Second, context.Canceled, 50 * time.Millisecond, 2 * time.Second},
		{"deadline, no timeout", func(c context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(c, 100*time.Millisecond)
		}, 0, context.DeadlineExceeded, 100 * time.Millisecond, 2 * time.Second},
		{"timeout", func(c context.Context) (context.Context, context.CancelFunc) {
			return context.WithCancel(c)
		}, 200 * time.Millisecond, flock.ErrTimeout, 200 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lock")
			held(t, path)
			// Start the clock before the context: its timer counts from
			// when it is made, so a clock started after could read less.
			start := time.Now()
			ctx, cancel := tc.ctx(t.Context())
			defer cancel()
			release, err := flock.Acquire(ctx, path, tc.timeout)
			elapsed := time.Since(start)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, release)
			require.GreaterOrEqual(t, elapsed, tc.min)
			require.Less(t, elapsed, tc.max)
			if tc.want == flock.ErrTimeout {
				var pe *fs.PathError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "lock", pe.Op)
				require.Equal(t, path, pe.Path)
			} else {
				require.Equal(t, ctx.Err(), err, "the context's error itself")
			}
		})
	}
}

// A free lock is taken even when ctx has already ended: it always tries once.
func TestAcquireTriesOnceWithAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	release, err := flock.Acquire(ctx, filepath.Join(t.TempDir(), "lock"), time.Second)
	require.NoError(t, err)
	release()
}

func TestAcquireCannotOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "lock")
	_, err := flock.Acquire(t.Context(), path, time.Second)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "open", pe.Op)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.False(t, errors.Is(err, flock.ErrTimeout))
}
