package views

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// statDir looks up files of one directory by name, relative to the
// directory opened once (fstatat): a projection of a fleet at rest asks
// which file each of 10,000 transcripts is, and the kernel then walks one
// name each instead of the whole path. It answers as lstatID does.
type statDir struct {
	path string
	f    *os.File // nil when the directory did not open: each lookup by path
	fd   int      // f's, taken once: lookups run on every core
}

// openStatDir opens dir for lookups; a directory that does not open is
// looked up by path, file by file, which fails or succeeds as lstatID does.
func openStatDir(dir string) *statDir {
	f, err := os.Open(dir)
	if err != nil {
		return &statDir{path: dir}
	}
	return &statDir{path: dir, f: f, fd: int(f.Fd())}
}

func (d *statDir) Close() {
	if d.f != nil {
		d.f.Close()
	}
}

// lstatID is the fileID of the regular file name in d; ok is false when
// there is none. Symbolic links are not followed.
func (d *statDir) lstatID(name string) (id fileID, ok bool, err error) {
	if d.f == nil {
		return lstatID(filepath.Join(d.path, name))
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fileID{}, false, nil
		}
		return fileID{}, false, fmt.Errorf("stat view %s: %w", filepath.Join(d.path, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, false, nil
	}
	return fileID{ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}, true, nil
}

// isFile says whether the file name in d is still the one id names.
func (d *statDir) isFile(name string, id fileID) bool {
	have, ok, err := d.lstatID(name)
	return err == nil && ok && have == id
}
