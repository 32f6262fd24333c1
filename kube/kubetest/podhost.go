package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// PodHost is a network namespace that stands in for a node's pod network:
// a veth pair whose inner end has the address a test kubelet reports as
// the pod IP. The API server's pod proxy then reaches a test bridge there,
// and no traffic leaves this machine: the addresses are in the
// benchmarking range 198.18.0.0/15 and exist only on the pair.
type PodHost struct {
	Name   string // the namespace
	IP     string // the pod's address, inside the namespace
	HostIP string // the root namespace's end of the pair
}

// NewPodHost creates the namespace and pair, removed in tb's cleanup. It
// needs root and iproute2; without them it skips, or fails when CI is set.
func NewPodHost(tb testing.TB) *PodHost {
	tb.Helper()
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		if inCI() {
			tb.Fatalf("CI is set but a pod network needs root and iproute2 (ip): %v", err)
		}
		tb.Skip("a pod network needs root and iproute2 (ip)")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	// A random /30 in 198.18.0.0/15, so concurrent test binaries do not
	// collide.
	third := int(b[0])&0xfe + int(b[1])&1
	fourth := (int(b[2]) % 63) * 4
	h := &PodHost{
		Name:   "spore-" + id,
		HostIP: fmt.Sprintf("198.18.%d.%d", third, fourth+1),
		IP:     fmt.Sprintf("198.18.%d.%d", third, fourth+2),
	}
	outer, inner := "sph"+id, "spp"+id
	run := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", h.Name)
	tb.Cleanup(func() {
		_ = exec.Command("ip", "netns", "pids", h.Name).Run()
		if out, err := exec.Command("ip", "netns", "pids", h.Name).Output(); err == nil {
			for _, p := range strings.Fields(string(out)) {
				_ = exec.Command("kill", "-9", p).Run()
			}
		}
		_ = exec.Command("ip", "link", "del", outer).Run()
		_ = exec.Command("ip", "netns", "del", h.Name).Run()
	})
	run("link", "add", outer, "type", "veth", "peer", "name", inner)
	run("link", "set", inner, "netns", h.Name)
	run("addr", "add", h.HostIP+"/30", "dev", outer)
	run("link", "set", outer, "up")
	run("netns", "exec", h.Name, "ip", "addr", "add", h.IP+"/30", "dev", inner)
	run("netns", "exec", h.Name, "ip", "link", "set", inner, "up")
	run("netns", "exec", h.Name, "ip", "link", "set", "lo", "up")
	return h
}

// Command runs name inside the namespace (ip netns exec).
func (h *PodHost) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Listen opens a TCP listener on the pod's address inside the namespace,
// for an in-process test server: the socket is made from a thread moved
// into the namespace and keeps belonging to it after the thread returns.
func (h *PodHost) Listen(port int) (net.Listener, error) {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + h.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", h.Name, err)
	}
	l, lerr := net.Listen("tcp", net.JoinHostPort(h.IP, fmt.Sprint(port)))
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// This thread is in the wrong namespace for good: keep it locked
		// so the runtime retires it with this goroutine.
		if l != nil {
			l.Close()
		}
		return nil, fmt.Errorf("leave %s: %w", h.Name, err)
	}
	runtime.UnlockOSThread()
	return l, lerr
}
