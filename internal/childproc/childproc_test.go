package childproc

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A child started with Pdeathsig outlives the retirement of a thread that
// a goroutine left locked: the thread it was started from is its own.
func TestChildOutlivesARetiredThread(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited := make(chan error, 1)
	require.NoError(t, Start(cmd, func(err error) { exited <- err }))
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	// Retire many threads: each goroutine ends locked, so its thread
	// exits with it.
	for range 50 {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
	select {
	case err := <-exited:
		t.Fatalf("the child was killed when a thread was retired: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, cmd.Process.Signal(syscall.Signal(0)), "still running")
}

func TestStartError(t *testing.T) {
	called := false
	err := Start(exec.Command("/nonexistent/binary"), func(error) { called = true })
	require.Error(t, err)
	require.False(t, called)
}
