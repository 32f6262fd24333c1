package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Faults the recovery tests inflict on a running node: its kubelet or
// containerd stopped and started again, and the host's view of a
// container's processes (to kill one of them by its host PID).

// StopKubelet stops the kubelet (SIGTERM, as a service manager would).
// Its pods' containers keep running under their shims; the node goes
// NotReady once the controller-manager's grace period has passed.
func (n *Node) StopKubelet() error {
	p := n.proc("kubelet")
	if p == nil {
		return fmt.Errorf("stop the kubelet: the node runs none")
	}
	n.stopProc("kubelet", 15*time.Second)
	return nil
}

// StartKubelet starts the kubelet again with the command line it first
// ran with, and waits (up to limit) for the node to be Ready.
func (n *Node) StartKubelet(ctx context.Context, limit time.Duration) error {
	if err := n.respawn("kubelet"); err != nil {
		return err
	}
	return n.waitNodeReady(ctx, limit)
}

// RestartContainerd stops containerd (SIGTERM, up to 15 s) and starts it
// again with the same config, waiting until it answers. The shims, and so
// the containers, are not its children: they run on.
func (n *Node) RestartContainerd(ctx context.Context) error {
	if n.proc("containerd") == nil {
		return fmt.Errorf("restart containerd: the node runs none")
	}
	n.stopProc("containerd", 15*time.Second)
	if err := n.respawn("containerd"); err != nil {
		return err
	}
	return n.waitContainerd(ctx)
}

// respawn runs an exited node process again with its first command line.
// The old log is kept beside the new one (name.N.log).
func (n *Node) respawn(name string) error {
	for i, p := range n.procs {
		if p.name != name {
			continue
		}
		if !p.exited() {
			return fmt.Errorf("start %s again: it still runs", name)
		}
		log := filepath.Join(n.dir, name+".log")
		for k := 1; ; k++ {
			old := filepath.Join(n.dir, fmt.Sprintf("%s.%d.log", name, k))
			if _, err := os.Stat(old); os.IsNotExist(err) {
				_ = os.Rename(log, old)
				break
			}
		}
		n.procs = append(n.procs[:i], n.procs[i+1:]...)
		return n.spawn(p.cmd.Path, p.cmd.Args[1:]...)
	}
	return fmt.Errorf("start %s again: the node never ran it", name)
}

// waitContainerd waits up to 30 s for a containerd just started to
// answer, failing at once if it exits.
func (n *Node) waitContainerd(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.ctr(ctx, "version")
		if err == nil {
			return nil
		}
		if p := n.proc("containerd"); p == nil || p.exited() {
			return fmt.Errorf("containerd exited:\n%s", n.NodeLogTail("containerd"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd not answering after 30s: %v\n%s", err, n.NodeLogTail("containerd"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PID returns the host PID of the node's own process name (kubelet,
// containerd, …), or 0 when it does not run.
func (n *Node) PID(name string) int {
	p := n.proc(name)
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// NodeReady is the node's Ready condition as the API server holds it
// ("" when it has none yet).
func (n *Node) NodeReady(ctx context.Context) (corev1.ConditionStatus, error) {
	node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read node %s: %w", n.Name, err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, nil
		}
	}
	return "", nil
}

// HostProc is one process of a container as the host sees it.
type HostProc struct {
	PID   int    // in the host's PID namespace
	NSPID int    // in the container's own PID namespace (what the container's processes see)
	PPID  int    // the host PID of its parent
	Comm  string // its command name (/proc/PID/comm)
}

// ContainerProcs lists the processes in the cgroup of a container, given
// its ID as the kubelet reports it ("containerd://…" or the bare ID): the
// cgroupfs driver names the container's cgroup after it.
func ContainerProcs(containerID string) ([]HostProc, error) {
	cid := containerID
	if _, after, ok := strings.Cut(containerID, "://"); ok {
		cid = after
	}
	if cid == "" {
		return nil, fmt.Errorf("container ID %q names no container", containerID)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var out []HostProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !strings.Contains(string(cg), cid) {
			continue
		}
		hp, ok := hostProc(pid)
		if ok {
			out = append(out, hp)
		}
	}
	return out, nil
}

// hostProc reads one process's status; false when it is gone.
func hostProc(pid int) (HostProc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return HostProc{}, false
	}
	hp := HostProc{PID: pid}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch {
		case k == "Name" && len(f) > 0:
			hp.Comm = f[0]
		case k == "PPid" && len(f) > 0:
			hp.PPID, _ = strconv.Atoi(f[0])
		case k == "NSpid" && len(f) > 0:
			// Outermost namespace first, the innermost (the container's)
			// last.
			hp.NSPID, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	return hp, true
}

// OOMKills lists the processes the kernel's OOM killer has killed since
// the machine booted, from its log (dmesg), as "PID (comm)", oldest first:
// the proof that a container died of the kernel and not of a signal.
func OOMKills(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "dmesg").Output()
	if err != nil {
		return nil, fmt.Errorf("read the kernel's log: %w", err)
	}
	var kills []string
	for _, line := range strings.Split(string(out), "\n") {
		// "Memory cgroup out of memory: Killed process 1234 (tail) total-vm:…"
		_, rest, ok := strings.Cut(line, "out of memory: Killed process ")
		if !ok {
			continue
		}
		if end := strings.Index(rest, ")"); end > 0 {
			kills = append(kills, rest[:end+1])
		}
	}
	return kills, nil
}
