package dirstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sporectl/sporectl/state"
)

// Test seams (like restic's): the risky system calls, so tests can make
// them fail on purpose — a full disk, an fsync error.
var (
	writeAt  = func(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }
	syncFile = func(f *os.File) error { return f.Sync() }
	// failpoint is called between the steps of a commit (format §5); the
	// crash harness makes it kill the process at a chosen step.
	failpoint = func(name string) {}
)

// syncDir makes a directory's entries (new, renamed, removed files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := syncFile(d); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// ioErr wraps an I/O failure so the CLI maps it to the store exit code,
// with a plain word for a full disk.
func ioErr(op string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return &state.UnavailableError{Op: op, Err: fmt.Errorf("disk full: %w", err)}
	}
	return &state.UnavailableError{Op: op, Err: err}
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
