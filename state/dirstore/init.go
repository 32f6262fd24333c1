package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// Init creates a store at root, or opens an existing one, upgrading it in
// place first when its format is older than this binary's (format §10).
// It reports whether it created one; settings are written only then.
//
// A new store is built in a temporary sibling directory and renamed into
// place, so a crash leaves either no store or a whole one (format §1). An
// existing empty directory is built in place, FORMAT last. Init refuses a
// non-empty directory that is not a store.
func Init(ctx context.Context, root string, settings state.Settings, opts Options) (*Store, bool, error) {
	opts.defaults()
	v, err := readFormatVersion(root)
	switch {
	case err == nil:
		if v < formatVersion {
			if err := upgrade(ctx, root, opts); err != nil {
				return nil, false, err
			}
		}
		s, err := Open(ctx, root, opts)
		return s, false, err
	case !errors.Is(err, state.ErrNoStore):
		return nil, false, err
	}
	if err := settings.Validate(); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	entries, err := os.ReadDir(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := buildAside(root, settings); err != nil {
			return nil, false, err
		}
	case err != nil:
		return nil, false, &state.UnavailableError{Op: "init store", Err: err}
	case len(entries) == 0 || partialInit(root, entries):
		// An existing directory (made by the user, or a mount point)
		// cannot be replaced by rename: the store is built in place, and
		// FORMAT, written last, is the commit point (format §1).
		if err := clearPartialInit(root, entries); err != nil {
			return nil, false, err
		}
		if err := buildStore(root, settings); err != nil {
			return nil, false, err
		}
	default:
		return nil, false, &state.UnavailableError{Op: "init store", Err: fmt.Errorf("%s is not empty and holds no store (no %s file); refusing to write into it", root, formatFile)}
	}
	s, err := Open(ctx, root, opts)
	return s, true, err
}

// buildAside builds a new store in a temporary sibling and renames it into
// place, so a crash leaves no store or a whole one.
func buildAside(root string, settings state.Settings) error {
	parent := filepath.Dir(filepath.Clean(root))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return ioErr("init store", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(root)+".init-")
	if err != nil {
		return ioErr("init store", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := buildStore(tmp, settings); err != nil {
		return err
	}
	if err := os.Rename(tmp, root); err != nil {
		return ioErr("init store", err)
	}
	if err := syncDir(parent); err != nil {
		return ioErr("init store", err)
	}
	return nil
}

// partialInit recognises what an in-place init leaves when it dies before
// writing FORMAT: only its own files, none holding data (an empty commit
// log, an empty events/, a snapshot without rows). Anything else is not
// ours to remove.
func partialInit(root string, entries []fs.DirEntry) bool {
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == lockFile, strings.HasPrefix(name, "."+snapshotFile):
		case name == eventsDir:
			inner, err := os.ReadDir(filepath.Join(root, eventsDir))
			if err != nil || len(inner) > 0 {
				return false
			}
		case name == txlogName(1):
			// Empty (format 1 and 2), or only its header.
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() || fi.Size() > headerSize {
				return false
			}
		case name == snapshotFile:
			data, err := os.ReadFile(filepath.Join(root, snapshotFile))
			if err != nil {
				return false
			}
			// An older binary's dead init counts too.
			c, err := decodeSnapshotFrom(snapshotFile, data, oldestFormat)
			if err != nil || len(c.sorted) > 0 || c.header.TxID != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func clearPartialInit(root string, entries []fs.DirEntry) error {
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return ioErr("init store", err)
		}
	}
	return nil
}

func buildStore(dir string, settings state.Settings) error {
	if err := os.Mkdir(filepath.Join(dir, eventsDir), 0o700); err != nil {
		return ioErr("init store", err)
	}
	m := &model{gen: 1, format: formatVersion, settings: settings, rows: map[string]*row{}}
	if err := writeSnapshot(dir, m); err != nil {
		return err
	}
	for _, name := range []string{txlogName(1), lockFile} {
		f, err := createFile(filepath.Join(dir, name), name)
		if err != nil {
			return storeErr("init store", err)
		}
		if name != lockFile {
			_, err = writeAt(f, newHeader(1, 0), 0)
		}
		if err == nil {
			err = syncFile(f)
		}
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
