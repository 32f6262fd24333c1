package views

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A projection makes its files durable together: one syncFiles for all
// it wrote, before any is renamed into place, and no fsync of each.
func TestProjectionSyncsItsFilesOnce(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	var calls [][]string
	sync := syncFiles
	t.Cleanup(func() { syncFiles = sync })
	syncFiles = func(root string, files []string) error {
		require.Equal(t, d.Path, root)
		for _, f := range files {
			require.True(t, strings.HasPrefix(filepath.Base(f), "."), "a staged file: %s", f)
			_, err := os.Stat(f)
			require.NoError(t, err, "staged, not yet renamed: %s", f)
		}
		calls = append(calls, files)
		return sync(root, files)
	}
	written, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Len(t, calls, 1, "one sync for the projection")
	require.Len(t, calls[0], len(written), "of every file it wrote")
	for _, f := range calls[0] {
		_, err := os.Stat(f)
		require.True(t, errors.Is(err, os.ErrNotExist), "staged file %s was renamed into place", f)
	}

	calls = nil
	written, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Empty(t, written)
	require.Empty(t, calls, "nothing written, nothing synced")
}

// If the staged files cannot be made durable, no view is replaced: the
// old ones stay as they were, no temporary file is left, and the error
// says so; the next projection writes them.
func TestProjectionThatCannotSyncReplacesNothing(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	status := filepath.Join(d.Path, StatusFile)
	before, err := os.ReadFile(status)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(status, []byte("stale\n"), filePerm))
	old := snapshot(t, d.Path)

	sync := syncFiles
	t.Cleanup(func() { syncFiles = sync })
	syncFiles = func(string, []string) error { return syscall.EIO }
	written, err := d.Project(t.Context(), st, res, Full)
	require.ErrorIs(t, err, syscall.EIO)
	require.Contains(t, err.Error(), "fsync views in "+d.Path)
	require.Empty(t, written)
	require.Equal(t, old, snapshot(t, d.Path), "nothing replaced, no temporary file left")

	syncFiles = sync
	written, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, []string{StatusFile}, written)
	after, err := os.ReadFile(status)
	require.NoError(t, err)
	require.Equal(t, before, after)
}
