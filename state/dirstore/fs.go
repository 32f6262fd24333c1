package dirstore

import (
	"errors"
	"fmt"
	"io/fs"
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

// storeErr is ioErr for errors that may already say the store is damaged.
func storeErr(op string, err error) error {
	var ce *state.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	return ioErr(op, err)
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

// The store never follows a symbolic link among its own files, and never
// writes into a file that has another name too (format §1): a link planted
// in the store would otherwise let a command read, truncate, append to or
// remove a file outside it. Both are damage, reported as a CorruptError
// naming the file, before anything is read or written.

const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// openFile opens the store's file at p (named name in errors) without
// following a symbolic link, and refuses anything but a regular file. The
// O_NONBLOCK only keeps a FIFO planted under a store file's name from
// blocking the open; it means nothing for a regular file. forWrite also
// refuses a file with more than one hard link, since writing to it in
// place would change the other name's contents too. A missing file is the
// *fs.PathError of os.OpenFile (errors.Is fs.ErrNotExist).
func openFile(p, name string, flag int, forWrite bool) (*os.File, error) {
	f, err := os.OpenFile(p, flag|noFollow, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, symlinkErr(name)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkRegular(name, fi, forWrite); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// createFile creates a new file of the store exclusively (never through
// a link, never over an existing file).
func createFile(p, name string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil && errors.Is(err, syscall.ELOOP) {
		return nil, symlinkErr(name)
	}
	return f, err
}

// readFileNoFollow is os.ReadFile through openFile; a file longer than
// limit (when limit > 0) is damage, not something to read into memory.
func readFileNoFollow(p, name string, limit int64) ([]byte, error) {
	f, err := openFile(p, name, os.O_RDONLY, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && fi.Size() > limit {
		return nil, &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("is %d bytes long; it should hold a few", fi.Size())}
	}
	data := make([]byte, fi.Size())
	n, err := readFull(f, data)
	return data[:n], err
}

func symlinkErr(name string) error {
	return &state.CorruptError{File: name, Offset: 0, Reason: "is a symbolic link; the store never follows links among its own files"}
}

// checkRegular is openFile's test of what it opened (or of an Lstat).
func checkRegular(name string, fi os.FileInfo, forWrite bool) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return symlinkErr(name)
	case !fi.Mode().IsRegular():
		return &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type())}
	case forWrite && links(fi) > 1:
		return &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("has %d hard links; writing to it would change another file too", links(fi))}
	}
	return nil
}

func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// checkDir refuses a store directory (events/, torn/) that is missing, a
// symbolic link or not a directory.
func checkDir(p, name string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &state.CorruptError{File: name, Offset: 0, Reason: "is missing"}
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return symlinkErr(name)
	case !fi.IsDir():
		return &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("is not a directory (%s)", fi.Mode().Type())}
	}
	return nil
}

// checkLockFile refuses a lock file that is a link or not a regular file
// before the lock is taken (taking it opens, and may create, the file).
func checkLockFile(root string) error {
	fi, err := os.Lstat(filepath.Join(root, lockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the lock creates it
	}
	if err != nil {
		return ioErr("lock store", err)
	}
	return checkRegular(lockFile, fi, false)
}
