package agent

import (
	"errors"

	"golang.org/x/sys/unix"
)

// The exit of a process waiting for its prompt is watched without
// reaping it (waitid's WNOWAIT): its os/exec Cmd reaps it, whether a turn
// took it or it is discarded, and a pid reaped elsewhere could be reused.

// waitExit blocks until the child pid has exited (or is no child of
// ours any more).
func waitExit(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// exitedNow reports whether the child pid has exited (or is no child of
// ours any more), without waiting.
func exitedNow(pid int) bool {
	for {
		var info unix.Siginfo // zeroed: Linux leaves it so when no child has exited
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return true
		}
		return info.Signo == int32(unix.SIGCHLD)
	}
}
