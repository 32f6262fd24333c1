package views

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A lookup relative to the opened directory answers as an lstat of the
// whole path does, for every kind of entry a views directory can hold,
// and so does one of a directory that did not open.
func TestStatDirAnswersAsLstat(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file.md"), []byte("x"), filePerm))
	require.NoError(t, os.Symlink("file.md", filepath.Join(dir, "link.md")))
	require.NoError(t, os.Symlink("nowhere.md", filepath.Join(dir, "dangling.md")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.md"), dirPerm))
	names := []string{"file.md", "link.md", "dangling.md", "dir.md", "missing.md"}

	for _, d := range []*statDir{openStatDir(dir), {path: dir}} {
		for _, name := range names {
			wantID, wantOK, wantErr := lstatID(filepath.Join(dir, name))
			id, ok, err := d.lstatID(name)
			require.Equal(t, wantErr, err, name)
			require.Equal(t, wantOK, ok, name)
			require.Equal(t, wantID, id, name)
			require.Equal(t, wantOK, d.isFile(name, wantID), name)
		}
		d.Close()
	}
	id, ok, err := lstatID(filepath.Join(dir, "file.md"))
	require.NoError(t, err)
	require.True(t, ok)
	require.NotZero(t, id.ino)

	gone := openStatDir(filepath.Join(dir, "gone"))
	defer gone.Close()
	require.Nil(t, gone.f, "a directory that is not there is looked up by path")
	_, ok, err = gone.lstatID("file.md")
	require.NoError(t, err)
	require.False(t, ok)
}
