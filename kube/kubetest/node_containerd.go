package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerdConfig is containerd's config (version 3) for the node. Every
// path (runc's state too) is under the node's directory except the shim
// sockets, which containerd always puts in /run/containerd/s (Stop
// removes /run/containerd when the node made it).
//   - restrict_oom_score_adj: these machines' root lacks CAP_SYS_RESOURCE,
//     so runc may not lower a container's oom_score_adj below containerd's
//     own; without it every sandbox fails ("nsexec: failed to update
//     /proc/self/oom_score_adj: Permission denied").
//   - SystemdCgroup = false: the kubelet uses the cgroupfs driver, the two
//     must agree.
//   - the sandbox image is the locally built pause image, pinned so the
//     kubelet's image GC never removes it and nothing is pulled.
//   - network namespaces live under the state directory, so a leftover
//     one is found (and removed) there.
//   - NRI is off and CDI looks only in the node's directory: they would
//     make sockets and directories outside it.
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.nri.v1.nri"]
[grpc]
  address = %[3]q
[plugins.'io.containerd.internal.v1.opt']
  path = %[4]q
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[5]q
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  cdi_spec_dirs = [%[9]q]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[6]q
        Root = %[10]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[7]q]
    conf_dir = %[8]q
    max_conf_num = 1
`

func (n *Node) containerdSocket() string {
	return filepath.Join(n.dir, "containerd", "containerd.sock")
}

func (n *Node) startContainerd(ctx context.Context) error {
	cdir := filepath.Join(n.dir, "containerd")
	netd := filepath.Join(n.dir, "cni", "net.d")
	for _, d := range []string{cdir, netd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(netd, "10-kubetest.conflist"), []byte(n.cniConfig()), 0o644); err != nil {
		return fmt.Errorf("write the CNI config: %w", err)
	}
	runc, _ := NodeBinary("runc")
	cfg := fmt.Sprintf(containerdConfig,
		filepath.Join(cdir, "root"), filepath.Join(cdir, "state"), n.containerdSocket(),
		filepath.Join(cdir, "opt"), PauseImage, runc, n.binDir, netd, filepath.Join(cdir, "cdi"), filepath.Join(cdir, "runc"))
	cfgFile := filepath.Join(cdir, "config.toml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write containerd's config: %w", err)
	}
	bin, _ := NodeBinary("containerd")
	if err := n.spawn(bin, "--config", cfgFile); err != nil {
		return err
	}
	return n.waitContainerd(ctx)
}

// cniConfig puts pods on the harness's bridge with addresses from its
// subnet; no masquerading, so nothing leaves the machine through it. Their
// one route beyond the subnet is the Services' range, through the bridge,
// where kube-proxy's rules take it: no default route, so a pod reaches
// nothing off the machine.
func (n *Node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubetest",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": %q}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, nodeBridge, n.Subnet, n.IP, ServiceCIDR, filepath.Join(n.dir, "cni", "ipam"))
}

// ctr runs containerd's client in the k8s.io namespace (the CRI's).
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	bin, err := NodeBinary("ctr")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--address", n.containerdSocket(), "-n", "k8s.io"}, args...)...)
	// Only stdout is the answer: ctr warns on stderr (cgroup v1 is
	// deprecated), and a list must not read the warning as IDs.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// ImportImage loads an OCI archive (an OCI layout in a tar whose index
// names the image, as kube/images writes it) into the
// node's containerd, where pods with imagePullPolicy Never find it.
func (n *Node) ImportImage(ctx context.Context, path string) error {
	if _, err := n.ctr(ctx, "images", "import", path); err != nil {
		return fmt.Errorf("import image %s: %w", path, err)
	}
	return nil
}

// removeAllTasks kills and removes whatever containers the kubelet left,
// so their shims exit before containerd does.
func (n *Node) removeAllTasks(ctx context.Context) {
	list := func(what string) []string {
		out, err := n.ctr(ctx, what, "ls", "-q")
		if err != nil {
			return nil
		}
		return strings.Fields(out)
	}
	for _, t := range list("tasks") {
		_, _ = n.ctr(ctx, "tasks", "kill", "-s", "KILL", t)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, t := range list("tasks") {
		for time.Now().Before(deadline) {
			if _, err := n.ctr(ctx, "tasks", "rm", "-f", t); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, c := range list("containers") {
		_, _ = n.ctr(ctx, "containers", "rm", c)
	}
}
