package views

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/google/renameio/v2"

	"github.com/sporectl/sporectl/state"
)

// Test seams (like the dir store's): the calls that change the directory,
// so tests can count them or make them fail.
var (
	// replaceFile atomically replaces path with data: renameio writes a
	// temporary file beside it, fsyncs it and renames it over path. The
	// directory's fsync, which makes the rename durable, is the caller's
	// (renameio leaves it to us).
	replaceFile = func(path string, data []byte) error {
		return renameio.WriteFile(path, data, filePerm, renameio.WithTempDir(filepath.Dir(path)))
	}
	removeFile = os.Remove
	syncDir    = func(dir string) error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
)

// Views hold conversations, so they are as private as the store.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// changes collects what a projection changed, and the directories whose
// entries must be made durable before it returns.
type changes struct {
	root    string
	written []string
	dirs    map[string]bool
}

// put writes data to rel (under root) unless the file holds it already.
func (c *changes) put(rel string, data []byte) error {
	p := filepath.Join(c.root, rel)
	old, err := os.ReadFile(p)
	switch {
	case err == nil && bytes.Equal(old, data):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read view %s: %w", p, err)
	}
	if err := replaceFile(p, data); err != nil {
		return viewErr("write view", p, err)
	}
	c.written = append(c.written, rel)
	c.dirs[filepath.Dir(p)] = true
	return nil
}

// remove deletes rel; a file already gone is not an error.
func (c *changes) remove(rel string) error {
	p := filepath.Join(c.root, rel)
	if err := removeFile(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return viewErr("remove view", p, err)
	}
	c.written = append(c.written, rel)
	c.dirs[filepath.Dir(p)] = true
	return nil
}

// mkdir makes dir (and its parents) if missing, noting the parents whose
// entries changed.
func (c *changes) mkdir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := c.mkdir(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return viewErr("create view directory", dir, err)
	}
	c.dirs[parent] = true
	return nil
}

// sync fsyncs every directory whose entries changed.
func (c *changes) sync() error {
	var errs []error
	for _, d := range sortedKeys(c.dirs) {
		if err := syncDir(d); err != nil {
			errs = append(errs, viewErr("fsync view directory", d, err))
		}
	}
	return errors.Join(errs...)
}

// viewErr is a failure to change the views directory, naming the file. A
// full disk or an exhausted quota is the store's own trouble (the views
// live beside it, and its next write fails the same way): it is a
// *state.UnavailableError, so the command exits as the store does on a
// full disk (6, docs/exit-codes.md), not with a generic failure.
func viewErr(op, path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return &state.UnavailableError{Op: op + " " + path, Err: fmt.Errorf("disk full: %w", err)}
	case errors.Is(err, syscall.EDQUOT):
		return &state.UnavailableError{Op: op + " " + path, Err: fmt.Errorf("disk quota exhausted: %w", err)}
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
