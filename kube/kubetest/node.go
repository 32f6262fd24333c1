package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/internal/childproc"
)

// EnvNodeBinDir names the directory .ci/real-node.sh fills: kubelet,
// kube-controller-manager, kube-scheduler, containerd, ctr, the runc shim,
// runc and the CNI plugins. etcd and kube-apiserver still come from
// EnvBinDir.
const EnvNodeBinDir = "SPORECTL_NODE_BIN_DIR"

// NodeOptions tune StartNode; the zero value is what tests want.
type NodeOptions struct {
	// Name is the node's name (default "kubetest-node").
	Name string
	// MaxPods is the kubelet's pod limit (default 30).
	MaxPods int
	// Ready bounds the wait for the node to report Ready (default 2 min).
	Ready time.Duration
}

// Node is a real one-node Kubernetes: etcd and kube-apiserver (a Server),
// kube-controller-manager, kube-scheduler, kube-proxy (iptables mode, so
// Services work), containerd with runc and the kubelet, its pods on a
// bridge this harness creates. Pods reach the API server through the
// kubernetes Service, as in any cluster. Only one runs on a
// machine at a time (a file lock serialises test binaries): the kubelet's
// cgroups, sysctls and the kubelet port on the bridge are machine-wide.
type Node struct {
	*Server
	Name   string
	IP     string // the bridge's address: the node's InternalIP, reachable from pods
	Subnet string // the pods' addresses
	// ReadyAfter is how long StartNode took until the node was Ready.
	ReadyAfter time.Duration

	Client kubernetes.Interface
	binDir string
	dir    string
	procs  []*proc  // controller-manager, scheduler, kube-proxy, containerd, kubelet
	relays []*relay // the API server's to the pods, and ForwardToPods'
	host   *hostState
	lock   *os.File
	// spawnedPIDs are every process this node started, for Leftovers.
	spawnedPIDs []int
	stopped     bool
}

// The pod network: a /24 of the benchmarking range 198.18.0.0/15 on a
// bridge only this harness creates, so no address here can reach
// anything off this machine.
const (
	nodeBridge = "kubetest0"
	nodeIP     = "198.19.77.1"
	nodeSubnet = "198.19.77.0/24"
)

// NodeBinary is Binary for the node's binaries.
func NodeBinary(name string) (string, error) {
	dir := os.Getenv(EnvNodeBinDir)
	if dir == "" {
		return "", fmt.Errorf("%s is not set; run: export %s=\"$(.ci/real-node.sh)\"", EnvNodeBinDir, EnvNodeBinDir)
	}
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w (build it with .ci/real-node.sh)", p, err)
	}
	if st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}

// nodePrereqs says why a node cannot be had here, or nil.
func nodePrereqs() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("a real node needs root (cgroups, mounts, a bridge)"))
	}
	if _, err := exec.LookPath("ip"); err != nil {
		errs = append(errs, fmt.Errorf("a real node needs iproute2: %w", err))
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := Binary(b); err != nil {
			errs = append(errs, err)
		}
	}
	for _, b := range []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "containerd", "ctr", "containerd-shim-runc-v2", "runc", "bridge", "host-local", "loopback", "portmap"} {
		if _, err := NodeBinary(b); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NewNode starts a node for tb and stops it in tb's cleanup. When one
// cannot be had (not root, binaries missing) it skips with the reason, or
// fails when CI is set; a node that does not come up always fails.
func NewNode(tb testing.TB, opts NodeOptions) *Node {
	tb.Helper()
	if err := nodePrereqs(); err != nil {
		if inCI() {
			tb.Fatalf("CI is set but no real node can be had: %v", err)
		}
		tb.Skipf("no real node: %v", err)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), 5*time.Minute)
	defer cancel()
	n, err := StartNode(ctx, opts)
	mustf(tb, err, "start a real node")
	tb.Cleanup(func() {
		if err := n.Stop(); err != nil {
			tb.Errorf("stop the real node: %v", err)
		}
	})
	return n
}

// StartNode brings the whole node up and waits until it is Ready. On
// error everything it started is torn down again.
func StartNode(ctx context.Context, opts NodeOptions) (n *Node, err error) {
	if err := nodePrereqs(); err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = "kubetest-node"
	}
	if opts.MaxPods == 0 {
		opts.MaxPods = 30
	}
	if opts.Ready == 0 {
		opts.Ready = 2 * time.Minute
	}
	began := time.Now()
	mark := began
	phase := func(what string) {
		if os.Getenv("SPORECTL_KUBETEST_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "kubetest: start: %s took %s\n", what, time.Since(mark))
		}
		mark = time.Now()
	}
	n = &Node{Name: opts.Name, IP: nodeIP, Subnet: nodeSubnet, binDir: os.Getenv(EnvNodeBinDir)}
	if n.lock, err = lockNode(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if serr := n.Stop(); serr != nil {
				err = fmt.Errorf("%w (and tearing down: %v)", err, serr)
			}
		}
	}()
	// A node that died without teardown left kube-proxy's rules in the
	// machine's tables; they go before the machine's state is recorded.
	if b, err := os.ReadFile(hostStateFile); err == nil {
		var dead hostState
		_ = json.Unmarshal(b, &dead) // unreadable: recordHost says so
		if err := n.cleanupKubeProxy(ctx, dead.HadChains); err != nil {
			return n, fmt.Errorf("remove the rules of a node that did not stop: %w", err)
		}
	}
	// Record the host's state before anything changes it, so Stop puts
	// back exactly that.
	if n.host, err = recordHost(n.binDir); err != nil {
		return n, err
	}
	if n.dir, err = os.MkdirTemp("", "kubetest-node-"); err != nil {
		return n, fmt.Errorf("node dir: %w", err)
	}
	if err := n.host.createBridge(); err != nil {
		return n, err
	}
	if err := routeServices(); err != nil {
		return n, err
	}

	kcerts, err := writeKubeletClientCerts(n.dir)
	if err != nil {
		return n, err
	}
	n.Server, err = StartWithArgs(ctx,
		// The pods' kubelet is reached at the node's bridge address, and
		// proves itself with a client certificate the kubelet trusts.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate="+kcerts.clientCert,
		"--kubelet-client-key="+kcerts.clientKey,
		"--allow-privileged=true",
		// Pods reach the API server through the kubernetes Service: its
		// endpoints name the bridge's address (relayed to the loopback
		// the server listens on; see apiRelay).
		"--advertise-address="+nodeIP,
		"--endpoint-reconciler-type=lease",
	)
	if err != nil {
		return n, fmt.Errorf("start the API server: %w", err)
	}
	n.spawnedPIDs = append(n.spawnedPIDs, n.Server.PIDs()...)
	if n.Client, err = kubernetes.NewForConfig(n.Config); err != nil {
		return n, err
	}
	phase("API server")
	srvDir := filepath.Dir(n.Kubeconfig)

	cm, _ := NodeBinary("kube-controller-manager")
	if err := n.spawn(cm, "--kubeconfig="+n.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(srvDir, "sa.key"),
		"--root-ca-file="+filepath.Join(srvDir, "serving.crt"),
		"--use-service-account-credentials=false", "--controllers=*",
		// Claims bind within a second of their first pod being scheduled
		// (the default resync is 15 s).
		"--pvclaimbinder-sync-period=1s", "--v=0"); err != nil {
		return n, err
	}
	sched, _ := NodeBinary("kube-scheduler")
	if err := n.spawn(sched, "--kubeconfig="+n.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=0"); err != nil {
		return n, err
	}
	if err := n.apiRelay(); err != nil {
		return n, err
	}
	if err := n.startKubeProxy(); err != nil {
		return n, err
	}

	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	phase("controllers and containerd")
	images, err := writeNodeImages(ctx, n.dir)
	if err != nil {
		return n, err
	}
	for _, img := range images {
		if err := n.ImportImage(ctx, img); err != nil {
			return n, err
		}
	}

	phase("images (build and import)")
	cfg, err := n.writeKubeletConfig(kcerts.ca, opts.MaxPods)
	if err != nil {
		return n, err
	}
	kubelet, _ := NodeBinary("kubelet")
	if err := n.spawn(kubelet, "--config="+cfg, "--kubeconfig="+n.Kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"), "--cert-dir="+filepath.Join(n.dir, "kubelet-pki"),
		"--hostname-override="+n.Name, "--node-ip="+n.IP, "--v=1"); err != nil {
		return n, err
	}
	if err := n.waitNodeReady(ctx, opts.Ready); err != nil {
		return n, err
	}
	phase("kubelet to node Ready")
	n.ReadyAfter = time.Since(began)
	return n, nil
}

func (n *Node) spawn(bin string, args ...string) error {
	name := filepath.Base(bin)
	logFile, err := os.Create(filepath.Join(n.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "PATH="+n.binDir+":"+os.Getenv("PATH"))
	// Killed with the test binary, so a crashed test leaves no node
	// behind to fight the next one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	if err := childproc.Start(cmd, func(error) { logFile.Close(); close(p.done) }); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	n.procs = append(n.procs, p)
	n.spawnedPIDs = append(n.spawnedPIDs, cmd.Process.Pid)
	return nil
}

func (n *Node) proc(name string) *proc {
	for _, p := range n.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// stopProc sends SIGTERM, waits up to grace, then kills the process group.
func (n *Node) stopProc(name string, grace time.Duration) {
	p := n.proc(name)
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// NodeLogTail is LogTail for the node's own processes (kubelet,
// containerd, kube-scheduler, kube-controller-manager).
func (n *Node) NodeLogTail(name string) string { return logTail(n.dir, name) }

func (n *Node) waitNodeReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last := "not registered"
	for {
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err == nil {
			last = "no Ready condition"
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					if c.Status == corev1.ConditionTrue {
						return nil
					}
					last = c.Reason + ": " + c.Message
				}
			}
		}
		for _, p := range n.procs {
			if p.exited() {
				return fmt.Errorf("%s exited before the node was Ready:\n%s", p.name, n.NodeLogTail(p.name))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready after %s (%s):\n%s", n.Name, limit, last, n.NodeLogTail("kubelet"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Namespace creates a namespace for tb's pods, waits for the "default"
// service account the controller-manager makes (pods are refused until
// it exists), and deletes the namespace when tb ends.
func (n *Node) Namespace(tb testing.TB) string {
	tb.Helper()
	ctx := tb.Context()
	ns, err := n.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}, metav1.CreateOptions{})
	mustf(tb, err, "create namespace")
	tb.Cleanup(func() {
		_ = n.Client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns.Name
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			mustf(tb, err, "default service account in %s", ns.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop tears the node down completely, kubelet first: kube-proxy stops and
// its rules are removed (kube-proxy --cleanup), pods are deleted
// and left to the kubelet to unwind (CNI, volumes), then the kubelet
// stops, containerd's remaining tasks are killed, containerd, the
// controllers and the API server stop; then mounts under the node's
// directory, network namespaces, the bridge, the kubelet's cgroups and
// sysctls are put back as they were. Safe to call more than once; the
// error lists what could not be undone.
func (n *Node) Stop() error {
	if n.stopped {
		return nil
	}
	n.stopped = true
	var errs []error
	bg := context.Background()
	mark := time.Now()
	step := func(what string) {
		if os.Getenv("SPORECTL_KUBETEST_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "kubetest: stop: %s took %s\n", what, time.Since(mark))
		}
		mark = time.Now()
	}
	defer step("the rest")
	n.stopProc("kube-controller-manager", 10*time.Second)
	n.stopProc("kube-scheduler", 10*time.Second)
	if n.proc("kube-proxy") != nil {
		n.stopProc("kube-proxy", 10*time.Second)
		if err := n.cleanupKubeProxy(bg, n.host != nil && n.host.HadChains); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range n.relays {
		r.Close()
	}
	if n.Client != nil && n.proc("kubelet") != nil && !n.proc("kubelet").exited() {
		n.drainPods(bg, 30*time.Second)
	}
	step("controllers and pods")
	n.stopProc("kubelet", 15*time.Second)
	step("kubelet")
	if n.proc("containerd") != nil {
		n.removeAllTasks(bg)
		n.stopProc("containerd", 15*time.Second)
	}
	step("containerd")
	if n.Server != nil {
		n.Server.Stop()
	}
	step("API server")
	if n.host != nil {
		errs = append(errs, n.host.restore(n.binDir, n.dir))
	}
	if n.dir != "" && err0(errs) && !strings.Contains(os.Getenv("SPORECTL_KUBETEST_KEEP"), "1") {
		if err := os.RemoveAll(n.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", n.dir, err))
		}
	}
	if n.lock != nil {
		_ = n.lock.Close() // releases the flock
	}
	return errors.Join(errs...)
}

func err0(errs []error) bool { return errors.Join(errs...) == nil }

// drainPods deletes every pod with no grace and waits (up to limit) for
// the kubelet to have removed their containers and sandboxes.
func (n *Node) drainPods(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	zero := int64(0)
	nss, err := n.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, ns := range nss.Items {
		_ = n.Client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	}
	for ctx.Err() == nil {
		tasks, err := n.ctr(ctx, "tasks", "ls", "-q")
		if err == nil && strings.TrimSpace(tasks) == "" && len(n.host.podNetns(n.dir)) == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}
