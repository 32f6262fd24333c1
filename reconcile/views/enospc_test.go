package views

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestFullDiskIsTheStoresTrouble: a full disk (ENOSPC) or an exhausted
// quota (EDQUOT) while writing, removing or fsyncing a view is a
// *state.UnavailableError naming the file (the CLI's exit 6), with the
// errno kept; any other failure stays a plain error.
//
// It replaces the package's seams: never t.Parallel.
func TestFullDiskIsTheStoresTrouble(t *testing.T) {
	cases := []struct {
		name        string
		errno       error
		failWrite   bool // else fsync of the views directory
		unavailable bool
		msg         string
	}{
		{"write ENOSPC", syscall.ENOSPC, true, true, "write view %s: disk full"},
		{"write EDQUOT", syscall.EDQUOT, true, true, "write view %s: disk quota exhausted"},
		{"write EACCES", syscall.EACCES, true, false, "write view %s: "},
		{"fsync ENOSPC", syscall.ENOSPC, false, true, "fsync view directory %s: disk full"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			res := fleet(t, st)
			d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
			write, sync := stageFile, syncDir
			t.Cleanup(func() { stageFile, syncDir = write, sync })
			status := filepath.Join(d.Path, StatusFile)
			if c.failWrite {
				stageFile = func(p string, b []byte) (string, error) {
					if p == status {
						// As the write reports it: the temporary file's.
						return "", &fs.PathError{Op: "write", Path: p + ".tmp123", Err: c.errno}
					}
					return write(p, b)
				}
			} else {
				syncDir = func(dir string) error {
					if dir == d.Path {
						return &fs.PathError{Op: "sync", Path: dir, Err: c.errno}
					}
					return sync(dir)
				}
			}
			_, err := d.Project(t.Context(), st, res, Full)
			require.Error(t, err)
			require.ErrorIs(t, err, c.errno)
			var un *state.UnavailableError
			require.Equal(t, c.unavailable, errors.As(err, &un), "%v", err)
			named := status
			if !c.failWrite {
				named = d.Path
			}
			require.Contains(t, err.Error(), fmt.Sprintf(c.msg, named))
		})
	}
}
