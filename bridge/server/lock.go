package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrHomeBusy: another bridge already serves this home. Two bridges on
// one home would number lines twice and run two agents on one session.
var ErrHomeBusy = errors.New("another bridge holds this home")

// lockHome takes an exclusive flock on the home's lock file. The kernel
// drops it when the process dies, however it dies.
func lockHome(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrHomeBusy)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
