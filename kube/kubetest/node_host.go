package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel settings the kubelet changes on start (its "protect kernel
// defaults" list); Stop writes back what they were before.
var kubeletSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
}

// hostState is what the machine looked like before the node started, so
// teardown undoes exactly what the node did and nothing else.
//
// It is also written to hostStateFile while a node runs: a node killed
// with its test binary cannot put the machine back, and the next node
// must restore the machine's values, not the dead kubelet's.
type hostState struct {
	Sysctls         map[string]string
	HadRunContainer bool            // /run/containerd existed
	HadLogDir       bool            // /var/log/containers existed
	HadKubeletLib   bool            // /var/lib/kubelet existed (device plugins' socket)
	HadCNILib       bool            // /var/lib/cni existed (libcni's result cache)
	HadChains       bool            // the kubelet's iptables chains existed
	HadCgroup       map[string]bool // a kubepods cgroup that existed, by path
	NetnsBefore     map[string]bool // names in /run/netns
}

// hostStateFile outlives a crashed test binary (it is not under the
// node's temporary directory) and is removed by a clean teardown.
const hostStateFile = "/run/sporectl-kubetest-node.json"

func sysctlPath(k string) string { return "/proc/sys/" + strings.ReplaceAll(k, ".", "/") }

// kubepodsCgroups are the kubelet's cgroups (cgroupfs driver) in every
// hierarchy, present or not: /sys/fs/cgroup/<controller>/kubepods on
// cgroup v1, /sys/fs/cgroup/kubepods on v2.
func kubepodsCgroups() []string {
	out := []string{"/sys/fs/cgroup/kubepods"}
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name(), "kubepods"))
		}
	}
	return out
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func netnsNames() map[string]bool {
	m := map[string]bool{}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// clearStale removes what a node killed with its test binary left (the
// lock is held, so no other node runs): its processes, its mounts and
// directories under the temporary directory.
func clearStale(binDir string) {
	for _, pid := range processesOf(binDir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(func() bool { return len(processesOf(binDir)) == 0 }, 5*time.Second)
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), "kubetest-node-*"))
	for _, d := range stale {
		for i := 0; i < 5; i++ {
			points, _ := mountsUnder(d)
			if len(points) == 0 {
				break
			}
			for _, p := range points {
				_ = unix.Unmount(p, unix.MNT_DETACH)
			}
		}
		if points, _ := mountsUnder(d); len(points) == 0 {
			_ = os.RemoveAll(d)
		}
	}
}

func recordHost(binDir string) (*hostState, error) {
	clearStale(binDir)
	if b, err := os.ReadFile(hostStateFile); err == nil {
		// A node died without teardown: what it recorded is the
		// machine's real state; Stop will put that back.
		var h hostState
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, fmt.Errorf("read %s (left by a node that did not stop): %w", hostStateFile, err)
		}
		// Its containers outlived their shims; their cgroups are its.
		for _, c := range kubepodsCgroups() {
			if !h.HadCgroup[c] {
				for _, pid := range cgroupProcs(c) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		return &h, nil
	}
	h := &hostState{Sysctls: map[string]string{}, HadCgroup: map[string]bool{}}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile(sysctlPath(k))
		if err != nil {
			continue // not on this kernel
		}
		h.Sysctls[k] = strings.TrimSpace(string(b))
	}
	h.HadRunContainer = exists("/run/containerd")
	h.HadLogDir = exists("/var/log/containers")
	h.HadKubeletLib = exists("/var/lib/kubelet")
	h.HadCNILib = exists("/var/lib/cni")
	h.HadChains = len(kubeletChains()) > 0
	for _, c := range kubepodsCgroups() {
		if !exists(c) {
			continue
		}
		// Left by a node that crashed (the lock says none runs now): an
		// empty tree is removed, one with processes is someone else's.
		if procs := cgroupProcs(c); len(procs) > 0 {
			return nil, fmt.Errorf("%s holds processes %v: another kubelet runs on this machine", c, procs)
		}
		removeCgroupTree(c)
		if exists(c) {
			h.HadCgroup[c] = true
		}
	}
	h.NetnsBefore = netnsNames()
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(hostStateFile, b, 0o600); err != nil {
		return nil, fmt.Errorf("record the machine's state: %w", err)
	}
	return h, nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func linkExists(name string) bool { return exec.Command("ip", "link", "show", name).Run() == nil }

// createBridge makes the node's bridge with its address: the node's
// InternalIP and the pods' gateway. A bridge of that name can only be
// one a crashed run left (the lock is held), so it is replaced.
func (h *hostState) createBridge() error {
	if linkExists(nodeBridge) {
		deleteBridge()
	}
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return fmt.Errorf("create the node's bridge: %w", err)
		}
	}
	return nil
}

// deleteBridge removes the veths on the bridge (their pods are gone) and
// the bridge.
func deleteBridge() {
	out, _ := exec.Command("ip", "-o", "link", "show", "master", nodeBridge).Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, ": ", 3)
		if len(f) >= 2 {
			_ = ip("link", "delete", strings.SplitN(f[1], "@", 2)[0])
		}
	}
	_ = ip("link", "delete", nodeBridge)
}

func cgroupProcs(c string) []int {
	var pids []int
	_ = filepath.WalkDir(c, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroupTree removes a cgroup and its children, deepest first.
func removeCgroupTree(c string) {
	var dirs []string
	_ = filepath.WalkDir(c, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}

// mountsUnder lists mount points under dir, deepest first, with their
// filesystem type.
func mountsUnder(dir string) (points, types []string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || dir == "" {
		return nil, nil
	}
	type m struct{ point, fstype string }
	var ms []m
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		point := unescapeMount(f[4])
		if point != dir && !strings.HasPrefix(point, dir+"/") {
			continue
		}
		fstype := ""
		for i, x := range f {
			if x == "-" && i+1 < len(f) {
				fstype = f[i+1]
			}
		}
		ms = append(ms, m{point, fstype})
	}
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].point) > len(ms[j].point) })
	for _, x := range ms {
		points, types = append(points, x.point), append(types, x.fstype)
	}
	return points, types
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// podNetns are the pod network namespaces still mounted under dir
// (containerd keeps them under its state directory here).
func (h *hostState) podNetns(dir string) []string {
	var out []string
	points, types := mountsUnder(dir)
	for i, p := range points {
		if types[i] == "nsfs" {
			out = append(out, p)
		}
	}
	for name := range netnsNames() {
		if h != nil && !h.NetnsBefore[name] && strings.HasPrefix(name, "cni-") {
			out = append(out, "/run/netns/"+name)
		}
	}
	return out
}

// processesOf are live processes whose executable is in binDir (shims and
// runc outlive containerd when it is killed).
func processesOf(binDir string) []int {
	if binDir == "" {
		return nil
	}
	real, err := filepath.EvalSymlinks(binDir)
	if err != nil {
		real = binDir
	}
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if d := filepath.Dir(exe); d == binDir || d == real {
			pids = append(pids, pid)
		}
	}
	return pids
}

// restore undoes what the node did to the machine. The error names what
// is still there.
func (h *hostState) restore(binDir, dir string) error {
	var errs []error
	// Container processes first (their cgroups), then stray shims.
	for _, c := range kubepodsCgroups() {
		for _, pid := range cgroupProcs(c) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, pid := range processesOf(binDir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(func() bool { return len(processesOf(binDir)) == 0 }, 5*time.Second)

	// Mounts (rootfs overlays, volumes, netns, the kubelet's tmpfs for
	// secrets), repeated because unmounting one can reveal another.
	for i := 0; i < 5; i++ {
		points, _ := mountsUnder(dir)
		if len(points) == 0 {
			break
		}
		for _, p := range points {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	for name := range netnsNames() {
		if !h.NetnsBefore[name] && strings.HasPrefix(name, "cni-") {
			_ = unix.Unmount("/run/netns/"+name, unix.MNT_DETACH)
			_ = os.Remove("/run/netns/" + name)
		}
	}
	deleteBridge()

	for _, c := range kubepodsCgroups() {
		if exists(c) && !h.HadCgroup[c] {
			removeCgroupTree(c)
		}
	}
	for k, v := range h.Sysctls {
		if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", k, v, err))
		}
	}
	// The kubelet links container logs from /var/log/containers into its
	// pod log directory.
	if ents, err := os.ReadDir("/var/log/containers"); err == nil {
		for _, e := range ents {
			p := filepath.Join("/var/log/containers", e.Name())
			if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, dir+"/") {
				_ = os.Remove(p)
			}
		}
		if !h.HadLogDir {
			_ = os.Remove("/var/log/containers")
		}
	}
	if !h.HadRunContainer {
		_ = os.RemoveAll("/run/containerd")
	}
	// The kubelet's device-plugin socket has a fixed path, and libcni
	// caches each attachment's result under /var/lib/cni, named after
	// the network ("kubetest").
	if !h.HadKubeletLib {
		_ = os.RemoveAll("/var/lib/kubelet")
	}
	if cached, _ := filepath.Glob("/var/lib/cni/results/kubetest-*"); len(cached) > 0 {
		for _, c := range cached {
			_ = os.Remove(c)
		}
	}
	if !h.HadCNILib {
		_ = os.RemoveAll("/var/lib/cni")
	}
	if left := h.leftovers(binDir, dir, nil); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(left, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return err // the state file stays, for the next node to finish the job
	}
	if err := os.Remove(hostStateFile); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", hostStateFile, err)
	}
	return nil
}

func waitGone(done func() bool, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

// leftovers describes whatever of the node is still on the machine.
func (h *hostState) leftovers(binDir, dir string, pids []int) []string {
	var out []string
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			out = append(out, fmt.Sprintf("process %d", pid))
		}
	}
	for _, pid := range processesOf(binDir) {
		out = append(out, fmt.Sprintf("process %d running a node binary", pid))
	}
	if points, _ := mountsUnder(dir); len(points) > 0 {
		out = append(out, "mounts "+strings.Join(points, ", "))
	}
	if ns := h.podNetns(dir); len(ns) > 0 {
		out = append(out, "network namespaces "+strings.Join(ns, ", "))
	}
	if linkExists(nodeBridge) {
		out = append(out, "link "+nodeBridge)
	}
	for _, c := range kubepodsCgroups() {
		if exists(c) && !h.HadCgroup[c] {
			out = append(out, "cgroup "+c)
		}
	}
	for _, p := range []struct {
		path string
		had  bool
	}{{"/var/lib/kubelet", h.HadKubeletLib}, {"/var/lib/cni", h.HadCNILib}, {"/run/containerd", h.HadRunContainer}} {
		if !p.had && exists(p.path) {
			out = append(out, "directory "+p.path)
		}
	}
	if !h.HadChains {
		if chains := kubeletChains(); len(chains) > 0 {
			out = append(out, "iptables chains "+strings.Join(chains, ", "))
		}
	}
	for k, v := range h.Sysctls {
		if b, err := os.ReadFile(sysctlPath(k)); err == nil && strings.TrimSpace(string(b)) != v {
			out = append(out, fmt.Sprintf("sysctl %s=%s (was %s)", k, strings.TrimSpace(string(b)), v))
		}
	}
	return out
}

// Leftovers lists what of the node remains on the machine after Stop:
// processes, mounts under its directory, network namespaces, the bridge,
// the kubelet's cgroups, changed sysctls. Empty means a clean teardown.
func (n *Node) Leftovers() []string {
	if n.host == nil {
		return nil
	}
	return n.host.leftovers(n.binDir, n.dir, n.spawnedPIDs)
}

// lockNode takes the machine-wide lock that keeps a second node (from
// another test binary) from starting while this one runs. Closing the
// file releases it, as does the process exiting.
func lockNode(ctx context.Context) (*os.File, error) {
	dir := "/run/lock"
	if !exists(dir) {
		dir = os.TempDir()
	}
	p := filepath.Join(dir, "sporectl-kubetest-node.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the node lock %s: %w", p, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another real node holds %s: %w", p, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kubeletChains are the KUBE- iptables chains present on the machine: the
// kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT),
// which the node's kubelet does not make, and kube-proxy's (KUBE-SERVICES,
// KUBE-SVC-…, KUBE-PROXY-CANARY, …), which its teardown removes.
func kubeletChains() []string {
	var out []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(save); err != nil {
			continue
		}
		b, err := exec.Command(save).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if c, ok := strings.CutPrefix(line, ":KUBE-"); ok {
				out = append(out, save+" KUBE-"+strings.Fields(c)[0])
			}
		}
	}
	return out
}
