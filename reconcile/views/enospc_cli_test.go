package views_test

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/cmd/cli"
	"github.com/sporectl/sporectl/reconcile/views"
)

// TestReconcileOnAFullDiskExitsStore: `sporectl reconcile` that cannot
// write a view for a full disk or an exhausted quota exits 6 (Store), as
// the store's own full disk does, naming the file; the next pass with
// room writes it and exits 0.
//
// It replaces the package's write seam: never t.Parallel.
func TestReconcileOnAFullDiskExitsStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	sporectl := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := cli.Run(context.Background(), append([]string{"--store", store}, args...), cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
		return code, errb.String()
	}
	code, msg := sporectl("init", "--agent", "echo")
	require.Equal(t, cli.ExitOK, code, msg)
	code, msg = sporectl("create", "w1")
	require.Equal(t, cli.ExitOK, code, msg)
	status := filepath.Join(store, "views", views.StatusFile)

	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		t.Run(errno.Error(), func(t *testing.T) {
			restore := views.SetStageFile(func(p string, b []byte) (string, error) {
				if p == status {
					return "", &fs.PathError{Op: "write", Path: p + ".tmp1", Err: errno}
				}
				return views.StageFile(p, b)
			})
			defer restore()
			code, msg := sporectl("reconcile")
			require.Equal(t, cli.ExitStore, code, msg)
			require.Contains(t, msg, "write view "+status)
			require.Contains(t, msg, errno.Error())
		})
	}
	code, msg = sporectl("reconcile")
	require.Equal(t, cli.ExitOK, code, msg)
	require.FileExists(t, status)
}
