package views

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sporectl/sporectl/state"
)

// Test seams (like the dir store's): the calls that change the directory,
// so tests can count them or make them fail.
var (
	// stageFile writes data to a new temporary file beside path
	// (writeTemp) and returns its name; sync renames it over path. It is
	// not fsynced here: sync makes every staged file durable at once
	// (syncFiles).
	stageFile = writeTemp
	// syncFiles makes the staged files' data durable before any is
	// renamed: one syncfs(2) of the filesystem holding root, which is one
	// call for the 20,000 files of a first projection where an fsync
	// each is 20,000; where syncfs is refused, an fsync of each file.
	syncFiles = func(root string, files []string) error {
		d, err := os.Open(root)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := unix.Syncfs(int(d.Fd())); err == nil {
			return nil
		}
		for _, name := range files {
			if err := syncFile(name); err != nil {
				return err
			}
		}
		return nil
	}
	// appendFile writes data over the file at path from offset at on,
	// in place (appendInPlace).
	appendFile = appendInPlace
	// openView opens a view to read it.
	openView   = os.Open
	renameFile = os.Rename
	removeFile = os.Remove
	syncDir    = syncFile
)

// writeTemp writes data to a new temporary file beside path (mode 0600,
// os.CreateTemp's, which is filePerm) and returns its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncFile fsyncs the file or directory name.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Views hold conversations, so they are as private as the store.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// changes collects what a projection changed: the files staged, to be
// made durable and renamed into place together by sync, and the
// directories whose entries must be made durable before it returns.
type changes struct {
	root    string
	written []string
	dirs    map[string]bool
	staged  []stagedFile
	// appended are the files written in place (appendAt), to be made
	// durable with the staged ones.
	appended []string
	// ids are the files (by rel) found holding what they should, and
	// those renamed into place, for the stamps.
	ids map[string]fileID
}

func newChanges(root string) *changes {
	return &changes{root: root, dirs: map[string]bool{}, ids: map[string]fileID{}}
}

// stagedFile is a view's new content written beside it (tmp), not yet
// renamed over it (path, rel under root); id is tmp's, which the rename
// keeps, when known.
type stagedFile struct {
	tmp, path, rel string
	id             fileID
	hasID          bool
}

// put writes data to rel (under root) unless the file holds it already.
func (c *changes) put(rel string, data []byte) error {
	p := filepath.Join(c.root, rel)
	old, id, err := readFileID(p)
	switch {
	case err == nil && bytes.Equal(old, data):
		c.ids[rel] = id
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read view %s: %w", p, err)
	}
	return c.replace(rel, data)
}

// readFileID reads the file at p, and says which version of it it read.
func readFileID(p string) ([]byte, fileID, error) {
	f, id, err := openID(p)
	if err != nil {
		return nil, fileID{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return b, id, err
}

// openID opens the view at p to read it, and says which version of the
// file it opened.
func openID(p string) (*os.File, fileID, error) {
	f, err := openView(p)
	if err != nil {
		return nil, fileID{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fileID{}, err
	}
	return f, idOf(&st), nil
}

// replace writes data to rel (under root): for a caller that knows the
// file does not hold it (a transcript whose stamp is not data's), so it
// is not read first.
func (c *changes) replace(rel string, data []byte) error {
	p := filepath.Join(c.root, rel)
	tmp, err := stageFile(p, data)
	if err != nil {
		return viewErr("write view", p, err)
	}
	id, ok, err := lstatID(tmp)
	c.staged = append(c.staged, stagedFile{tmp: tmp, path: p, rel: rel, id: id, hasID: ok && err == nil})
	return nil
}

// errMoved says a view is no longer the file a projection read (another
// projection replaced it or appended to it, or is appending to it now):
// it is not appended to.
var errMoved = errors.New("view changed since it was read")

// appendAt writes data over rel (under root) from offset at on, in place,
// if the file there is still the one id names: a transcript's new events,
// closing and stamp over its old closing and stamp. Unlike replace it is
// not atomic: a reader, or a crash, may meet the file with part of data
// written, which the stamp it then ends with does not describe
// (readStamp), so the next projection renders it again. errMoved when
// the file is another.
func (c *changes) appendAt(rel string, at int64, data []byte, id fileID) error {
	p := filepath.Join(c.root, rel)
	now, err := appendFile(p, at, data, id)
	if errors.Is(err, errMoved) {
		return err
	}
	if err != nil {
		return viewErr("append to view", p, err)
	}
	c.appended = append(c.appended, p)
	c.written = append(c.written, rel)
	c.ids[rel] = now
	return nil
}

// appendInPlace writes data at offset at of the file at p, cut to end
// there, under an exclusive flock and only if the file is still want
// (errMoved otherwise, and when another projection holds the lock: two
// appending at once would write over each other). It returns the file's
// new fileID.
func appendInPlace(p string, at int64, data []byte, want fileID) (fileID, error) {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fileID{}, errMoved
	}
	if err != nil {
		return fileID{}, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fileID{}, errMoved
		}
		return fileID{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	if idOf(&st) != want {
		return fileID{}, errMoved
	}
	if _, err := f.WriteAt(data, at); err != nil {
		return fileID{}, err
	}
	if end := at + int64(len(data)); st.Size > end {
		if err := f.Truncate(end); err != nil {
			return fileID{}, err
		}
	}
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return idOf(&st), nil
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

// sync puts the staged files in place, each atomically: their data made
// durable first (all at once, with the files appended to), then each
// renamed over its view, then every directory whose entries changed
// fsynced. If the data cannot be made durable no view is replaced: the
// staged files are removed, and the views stay as they were (but for the
// appended ones, already written in place, whose stamps are then not
// recorded).
func (c *changes) sync() error {
	var errs []error
	if len(c.staged)+len(c.appended) > 0 {
		files := make([]string, 0, len(c.staged)+len(c.appended))
		for _, f := range c.staged {
			files = append(files, f.tmp)
		}
		files = append(files, c.appended...)
		if err := syncFiles(c.root, files); err != nil {
			for _, f := range c.staged {
				_ = os.Remove(f.tmp)
			}
			c.staged = nil
			return viewErr("fsync views in", c.root, err)
		}
	}
	for _, f := range c.staged {
		if err := renameFile(f.tmp, f.path); err != nil {
			_ = os.Remove(f.tmp)
			errs = append(errs, viewErr("write view", f.path, err))
			continue
		}
		c.written = append(c.written, f.rel)
		c.dirs[filepath.Dir(f.path)] = true
		if f.hasID {
			c.ids[f.rel] = f.id
		}
	}
	c.staged = nil
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
