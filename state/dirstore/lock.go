package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/sporectl/sporectl/internal/flock"
)

// fileLock is the exclusive flock on the store's lock file, held until
// release. The kernel drops it when the process dies, so a crash never
// leaves the store locked.
type fileLock struct{ unlock func() }

// acquireLock waits up to timeout for the store's lock file. When ctx ends
// first the error is ctx.Err() itself.
func acquireLock(ctx context.Context, path string, timeout time.Duration) (*fileLock, error) {
	unlock, err := flock.Acquire(ctx, path, timeout)
	var pe *fs.PathError
	switch {
	case err == nil:
		return &fileLock{unlock: unlock}, nil
	case errors.Is(err, flock.ErrTimeout):
		return nil, fmt.Errorf("another sporectl is writing to this store and held its lock for more than %s", timeout)
	case errors.As(err, &pe) && pe.Op == "open":
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return nil, err
}

func (l *fileLock) release() { l.unlock() }
