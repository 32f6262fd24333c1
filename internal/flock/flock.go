// Package flock owns waiting for an exclusive flock(2) on a lock file:
// opening (creating) the file, retrying while another open file holds the
// lock, and giving up when the caller's context ends or a timeout passes.
// The kernel drops a flock when its holder dies, however it dies, so a
// crash never leaves a file locked.
//
// It knows nothing of what a lock guards, so callers word their own
// errors. It must never write to, truncate or remove a lock file: another
// process may hold it, and a removed file would let two holders in at once.
package flock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// ErrTimeout is what Acquire's error wraps when the lock was still held
// after its timeout.
var ErrTimeout = errors.New("lock still held by another")

// maxWait bounds the pause between two tries.
const maxWait = 64 * time.Millisecond

// Acquire takes an exclusive flock on path, creating the file (mode 0600)
// if needed. While another open file holds the lock it retries, pausing
// from 1 ms up to 64 ms between tries, until it gets the lock, ctx ends,
// or timeout has passed; timeout <= 0 waits as long as ctx allows. It
// always tries once, even with ctx already ended.
//
// When ctx ends first the error is ctx.Err() itself. Every other error is
// an *fs.PathError: Op "open" when the file cannot be opened, Op "lock"
// when flock fails or, wrapping ErrTimeout, when timeout passed.
//
// release unlocks and closes the file; call it exactly once.
func Acquire(ctx context.Context, path string, timeout time.Duration) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			f.Close()
			return nil, &fs.PathError{Op: "lock", Path: path, Err: ErrTimeout}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}
