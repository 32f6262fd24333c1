package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sporectl/sporectl/state"
)

// Init creates a store at root, or opens an existing one (upgrading its
// format when that is ever needed). It reports whether it created one;
// settings are written only then.
//
// A new store is built in a temporary sibling directory and renamed into
// place, so a crash leaves either no store or a whole one (format §1).
// Init refuses a non-empty directory that is not a store.
func Init(ctx context.Context, root string, settings state.Settings, opts Options) (*Store, bool, error) {
	opts.defaults()
	err := readFormat(root)
	switch {
	case err == nil:
		s, err := Open(ctx, root, opts)
		return s, false, err
	case !errors.Is(err, state.ErrNoStore):
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	entries, err := os.ReadDir(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, &state.UnavailableError{Op: "init store", Err: err}
	case len(entries) > 0:
		return nil, false, &state.UnavailableError{Op: "init store", Err: fmt.Errorf("%s is not empty and holds no store (no %s file); refusing to write into it", root, formatFile)}
	}
	parent := filepath.Dir(filepath.Clean(root))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, false, ioErr("init store", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(root)+".init-")
	if err != nil {
		return nil, false, ioErr("init store", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := buildStore(tmp, settings); err != nil {
		return nil, false, err
	}
	// rename(2) replaces an empty directory atomically.
	if err := os.Rename(tmp, root); err != nil {
		return nil, false, ioErr("init store", err)
	}
	if err := syncDir(parent); err != nil {
		return nil, false, ioErr("init store", err)
	}
	s, err := Open(ctx, root, opts)
	return s, true, err
}

func buildStore(dir string, settings state.Settings) error {
	if err := os.Mkdir(filepath.Join(dir, eventsDir), 0o700); err != nil {
		return ioErr("init store", err)
	}
	m := &model{gen: 1, settings: settings, rows: map[string]*row{}}
	if err := writeSnapshot(dir, m); err != nil {
		return err
	}
	for _, name := range []string{txlogName(1), lockFile} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return ioErr("init store", err)
		}
		err = syncFile(f)
		f.Close()
		if err != nil {
			return ioErr("init store", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, formatFile), formatBytes(), 0o600); err != nil {
		return ioErr("init store", err)
	}
	f, err := os.Open(filepath.Join(dir, formatFile))
	if err != nil {
		return ioErr("init store", err)
	}
	err = syncFile(f)
	f.Close()
	if err != nil {
		return ioErr("init store", err)
	}
	for _, d := range []string{filepath.Join(dir, eventsDir), dir} {
		if err := syncDir(d); err != nil {
			return ioErr("init store", err)
		}
	}
	return nil
}
