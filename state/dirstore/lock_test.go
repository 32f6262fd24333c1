package dirstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestWriterLockHonoursContext: an Update waiting for another Update of
// the same handle gives up as soon as its context ends, with an
// *UnavailableError that wraps the context's error, and never runs fn.
func TestWriterLockHonoursContext(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, Options{})
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))

	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Update(ctx, func(tx state.Tx) error {
			close(inside)
			<-release
			_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "first"}})
			return err
		})
	}()
	<-inside
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			return c, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 50*time.Millisecond) }, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cancel := tc.ctx()
			defer cancel()
			ran := false
			start := time.Now()
			err := s.Update(c, func(tx state.Tx) error { ran = true; return nil })
			elapsed := time.Since(start)
			require.ErrorIs(t, err, tc.want)
			var un *state.UnavailableError
			require.ErrorAs(t, err, &un)
			require.Equal(t, "wait for the store's writer lock: "+tc.want.Error(), err.Error())
			require.False(t, ran, "fn never runs without the lock")
			require.Less(t, elapsed, 5*time.Second, "returned promptly")
		})
	}

	// The holder is unaffected, and the lock is free again afterwards.
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "second"}})
		return err
	}))
	var evs []state.Event
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; evs, err = tx.Events(ctx, "one", 0, 0); return err }))
	require.Len(t, evs, 2)
}

// TestFileLockHonoursContext: an Update waiting for the flock another
// process holds returns as soon as its context ends, and after
// LockTimeout when the context does not end.
func TestFileLockHonoursContext(t *testing.T) {
	ctx := context.Background()
	// A minute's LockTimeout for the first wait, so the context's end is
	// told from the timeout by a margin no loaded machine eats (it was
	// 300ms, with the wait to end within 250ms).
	s := newTestStore(t, Options{LockTimeout: time.Minute})
	// A second open file description conflicts with the store's own, just
	// as another process would.
	f, err := os.OpenFile(filepath.Join(s.root, lockFile), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	c, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err = s.Update(c, func(tx state.Tx) error { return errors.New("fn ran without the lock") })
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 30*time.Second, "returned when the context ended, before LockTimeout")

	s.opts.LockTimeout = 300 * time.Millisecond
	start = time.Now()
	err = s.Update(ctx, func(tx state.Tx) error { return errors.New("fn ran without the lock") })
	var un *state.UnavailableError
	require.ErrorAs(t, err, &un)
	require.Contains(t, err.Error(), "held its lock for more than 300ms")
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
}
