package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sporectl/sporectl/state/statetest"
)

// TestDeleteAsksOnARealTerminalOnly: the real binary asks before a delete
// by selector when its stdin and stderr are a terminal (a pseudo-terminal
// here, as a person's shell has) and deletes on "y"; with stdin and stderr
// on /dev/null, a character device but no terminal (cron's), it asks
// nothing and refuses without --yes.
func TestDeleteAsksOnARealTerminalOnly(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--no-operator")
	runOK(t, store, "create", "a-1", "a-2", "--colony", "a")
	runOK(t, store, "create", "b-1", "--colony", "b")

	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	require.NoError(t, err)
	defer null.Close()
	cmd := sporectl(store, "delete", "-l", "colony=a")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 2, exit.ExitCode(), "/dev/null is no terminal: --yes required (exit 2)")
	require.Equal(t, "spore/a-1\nspore/a-2\nspore/b-1\n", string(runOK(t, store, "list", "-o", "name")))

	ptm, pts := openPTY(t)
	cmd = sporectl(store, "delete", "-l", "colony=a")
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &out, pts
	require.NoError(t, cmd.Start())
	pts.Close()
	// Read the question from the terminal, then answer it.
	asked := make(chan string, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 256)
		for !bytes.Contains(seen, []byte("[y/N] ")) {
			n, err := ptm.Read(buf)
			seen = append(seen, buf[:n]...)
			if err != nil {
				break
			}
		}
		asked <- string(seen)
	}()
	select {
	case q := <-asked:
		require.Contains(t, q, "delete 2 spore(s): a-1, a-2? [y/N] ")
	case <-time.After(30 * time.Second):
		t.Fatal("no question on the terminal")
	}
	_, err = io.WriteString(ptm, "y\n")
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "answered y")
	require.Equal(t, "spore/a-1 deleted\nspore/a-2 deleted\n", out.String())
	require.Equal(t, "spore/b-1\n", string(runOK(t, store, "list", "-o", "name")))
}

// openPTY opens a pseudo-terminal pair: the master the test reads and
// writes as a person's terminal would, the slave the process gets.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { ptm.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0), "unlock the pty")
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}
