package kubetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// DialFromNetns opens a TCP connection to addr from inside the network
// namespace of process pid (a container's), and closes it again: the
// packets leave through the pod's own interface, as the container's
// would, so the node's NetworkPolicy enforcement judges them as the
// pod's. nil means the connection was accepted.
func DialFromNetns(ctx context.Context, pid int, addr string, timeout time.Duration) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return fmt.Errorf("network namespace of process %d: %w", pid, err)
	}
	defer ns.Close()
	done := make(chan error, 1)
	go func() {
		// The thread enters the pod's namespace and is never unlocked:
		// when this goroutine ends the runtime retires the thread rather
		// than hand it, still in the pod's namespace, to other code.
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter the network namespace of process %d: %w", pid, err)
			return
		}
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			done <- err
			return
		}
		done <- c.Close()
	}()
	return <-done
}
