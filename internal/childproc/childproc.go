// Package childproc starts child processes whose parent-death signal
// (SysProcAttr.Pdeathsig) the Go runtime cannot set off by mistake.
//
// The kernel sends a child its Pdeathsig when the thread that forked it
// exits, not when the process does; and the Go runtime retires threads:
// one a goroutine leaves locked (runtime.LockOSThread without Unlock, as
// code that enters a network namespace does) is ended with the goroutine.
// A server a test started from such a thread is killed at a random later
// moment ("connection refused" to a server that was up). Start starts the
// child from a goroutine locked to its own thread that waits for the
// child there, so the thread lives exactly as long as the child.
package childproc

import (
	"os/exec"
	"runtime"
)

// Start starts cmd and, once it has exited, calls exited with what
// cmd.Wait returned (on the goroutine that waited). It returns
// cmd.Start's error; exited is not called then.
func Start(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}
