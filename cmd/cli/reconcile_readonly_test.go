package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// readOnly makes dir unwritable: a read-only bind mount of it over itself
// for root (whom file modes do not stop), its modes otherwise. Either way
// a write under it fails as it does on a read-only store.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			return os.Chmod(p, 0o555)
		}))
		t.Cleanup(func() {
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = os.Chmod(p, 0o755)
				}
				return nil
			})
		})
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bind-mount %s read-only: %v", dir, err)
		}
		t.Skipf("bind-mount %s read-only: %v", dir, err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, 0)) })
	require.NoError(t, syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
}

// TestReconcileOnAReadOnlyStore: a pass that has nothing to commit but
// its views, on a store it cannot write, exits 6 (Store) and says why
// once, not once per view file (docs/exit-codes.md).
func TestReconcileOnAReadOnlyStore(t *testing.T) {
	for _, c := range []struct {
		name   string
		before []string // run while the store is writable
	}{
		{"no views yet", nil},
		{"views written before", []string{"reconcile"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			mustRun(t, store, "init")
			mustRun(t, store, "create", "a", "b")
			if c.before != nil {
				mustRun(t, store, c.before...)
				// So that the next pass has a view to write.
				require.NoError(t, os.Remove(filepath.Join(store, "views", "fleet.json")))
			}
			readOnly(t, store)
			require.Error(t, os.WriteFile(filepath.Join(store, "probe"), nil, 0o644), "the store is read-only")

			r := run(t, store, "reconcile")
			require.Equal(t, ExitStore, r.code, "stderr: %s", r.err)
			lines := strings.Split(strings.TrimSpace(r.err), "\n")
			require.Len(t, lines, 1, "said once: %s", r.err)
			require.Regexp(t, `^error: write the views: \w+ \S*/store/views\S*: (read-only file system|permission denied)$`, lines[0])

			r = run(t, store, "status")
			require.Equal(t, 0, r.code, "reading still works: %s", r.err)
		})
	}
}
