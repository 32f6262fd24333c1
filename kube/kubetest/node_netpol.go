package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/internal/childproc"
)

// NetpolTable is the nftables table (family inet) kube-network-policies
// programs: a set of pod addresses and a chain that hands the first
// packet of every connection of a pod a policy selects to the daemon
// through an nfqueue, which accepts or drops it.
const NetpolTable = "kube-network-policies"

// ErrNoNFTQueue says the kernel has no nftables "queue" expression
// (CONFIG_NFT_QUEUE), the one thing kube-network-policies cannot do
// without: every verdict it gives goes through an nfqueue.
var ErrNoNFTQueue = errors.New("the kernel has no nftables queue expression (CONFIG_NFT_QUEUE is not set), which kube-network-policies needs for every verdict")

// NetworkPolicies is kube-network-policies running on the node as a host
// process, enforcing the cluster's NetworkPolicies on its pods' packets.
type NetworkPolicies struct {
	n       *Node
	p       *proc
	logPath string
	dir     string
	stopped bool
}

// NFTQueueSupported asks the kernel, with a throwaway table, whether an
// nftables rule can queue a packet to user space. nil means it can.
func NFTQueueSupported() error {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("nft (Debian's nftables, installed by .ci/real-node.sh): %w", err)
	}
	const probe = "kubetest_queue_probe"
	rules := "table inet " + probe + " {\n chain c {\n  type filter hook postrouting priority 0; policy accept;\n  meta l4proto tcp queue num 65000 bypass\n }\n}\n"
	cmd := exec.Command(nft, "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	out, err := cmd.CombinedOutput()
	// nft applies a file as one transaction: on failure nothing is
	// left; on success the probe table goes at once.
	_ = exec.Command(nft, "delete", "table", "inet", probe).Run()
	if err != nil {
		if strings.Contains(string(out), "No such file or directory") {
			return fmt.Errorf("%w: nft: %s", ErrNoNFTQueue, firstLine(string(out)))
		}
		return fmt.Errorf("probe the kernel's nftables queue support: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// StartNetworkPolicies runs kube-network-policies (built by
// .ci/real-node.sh) against the node's API server and waits until its
// nftables table queues packets to it. It reads its credentials the only way it
// can, in-cluster: so it runs in a mount namespace of its own with a
// tmpfs over /run holding the admin token and CA at the service-account
// paths, and nothing of that touches the machine. NRI is off (the
// node's containerd serves none); pods' addresses come from the API.
// When the kernel cannot queue packets it fails with ErrNoNFTQueue,
// after the daemon has shown it: it runs, syncs with the API server and
// cannot program its table.
func (n *Node) StartNetworkPolicies(ctx context.Context) (np *NetworkPolicies, err error) {
	bin, err := NodeBinary("kube-network-policies")
	if err != nil {
		return nil, err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("kube-network-policies needs its own mount namespace: %w", err)
	}
	// A table a killed run left behind (the node lock is held, so it is
	// no other node's).
	if err := deleteNetpolTable(); err != nil {
		return nil, err
	}
	u, err := url.Parse(n.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", n.Config.Host, err)
	}
	dir := filepath.Join(n.dir, "netpol")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"token": []byte(n.Config.BearerToken), "ca.crt": n.Config.CAData} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("kube-network-policies credentials: %w", err)
		}
	}
	np = &NetworkPolicies{n: n, dir: dir, logPath: filepath.Join(n.dir, "kube-network-policies.log")}
	logFile, err := os.Create(np.logPath)
	if err != nil {
		return nil, err
	}
	const sa = "/run/secrets/kubernetes.io/serviceaccount"
	script := `set -e
mount -t tmpfs -o mode=0755 kubetest-netpol /run
mkdir -p ` + sa + `
cp "$1/token" "$1/ca.crt" ` + sa + `/
shift
exec "$@"`
	// unshare execs the shell in place and the shell execs the daemon:
	// one process, the one Stop signals.
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", dir,
		bin, "--hostname-override="+n.Name, "--disable-nri", "--metrics-bind-address=127.0.0.1:0",
		// Kernels from 6.12 on fixed the conntrack race this works around.
		"--netfilter-bug-1766-fix=false", "--v=2")
	cmd.Env = append(os.Environ(), "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	np.p = &proc{name: "kube-network-policies", cmd: cmd, done: make(chan struct{})}
	if err := childproc.Start(cmd, func(error) { logFile.Close(); close(np.p.done) }); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kube-network-policies: %w", err)
	}
	n.spawnedPIDs = append(n.spawnedPIDs, cmd.Process.Pid)
	defer func() {
		if err != nil {
			if serr := np.Stop(); serr != nil {
				err = fmt.Errorf("%w (and stopping it: %v)", err, serr)
			}
		}
	}()
	return np, np.waitTable(ctx, 30*time.Second)
}

// waitTable waits for the daemon's table. On a kernel with no queue
// expression it never comes: the daemon syncs its caches, tries, logs
// the kernel's refusal and goes on; that log line is the evidence.
func (np *NetworkPolicies) waitTable(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	queueErr := NFTQueueSupported()
	for {
		// The table alone is not enough: the daemon creates it, with its
		// sets, apart from the chains, so a kernel that refuses the queue
		// rule still shows an empty table.
		if strings.Contains(netpolTableRules(), "queue") {
			return nil
		}
		if np.p.exited() {
			return fmt.Errorf("kube-network-policies exited:\n%s", np.LogTail())
		}
		if refused := np.refusal(); queueErr != nil && np.synced() && refused != "" {
			return fmt.Errorf("kube-network-policies synced with the API server but cannot program its table: %w; it logged: %s\n%s", queueErr, refused, np.LogTail())
		}
		select {
		case <-ctx.Done():
			if queueErr != nil {
				return fmt.Errorf("kube-network-policies' table not there after %s: %w\n%s", limit, queueErr, np.LogTail())
			}
			return fmt.Errorf("kube-network-policies' table not there after %s:\n%s", limit, np.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (np *NetworkPolicies) log() string {
	b, _ := os.ReadFile(np.logPath)
	return string(b)
}

// refusal is the daemon's log line where the kernel refused its rules
// (its one nftables transaction, answered with netlink's ENOENT for the
// unknown expression), or "".
func (np *NetworkPolicies) refusal() string {
	lines := strings.Split(np.log(), "\n")
	for i, line := range lines {
		if !strings.Contains(line, `"syncing nftables rules"`) || !strings.Contains(line, "error=") {
			continue
		}
		// klog writes a multi-line value as error=< ... > on lines of
		// their own.
		out := []string{strings.TrimSpace(line)}
		for j := i + 1; strings.HasSuffix(line, "error=<") && j < len(lines) && j < i+8; j++ {
			t := strings.TrimSpace(lines[j])
			out = append(out, t)
			if t == ">" {
				break
			}
		}
		return strings.Join(out, " ")
	}
	return ""
}

// synced: the daemon's informers saw the API server (it logs this once
// its caches are filled, just before it programs nftables).
func (np *NetworkPolicies) synced() bool {
	return strings.Contains(np.log(), "Caches are synced")
}

// LogTail is the end of the daemon's log, for failure output.
func (np *NetworkPolicies) LogTail() string {
	s := np.log()
	const max = 4000
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return s
}

// Stop ends the daemon (SIGINT, its clean shutdown, which deletes its
// table; SIGKILL after a grace) and removes its table if it is still
// there. Safe to call more than once; Leftovers then says what remains.
func (np *NetworkPolicies) Stop() error {
	if np == nil || np.stopped {
		return nil
	}
	np.stopped = true
	if np.p != nil {
		_ = np.p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-np.p.done:
		case <-time.After(10 * time.Second): // it sleeps 5 s to clean up
			_ = syscall.Kill(-np.p.cmd.Process.Pid, syscall.SIGKILL)
			<-np.p.done
		}
	}
	err := deleteNetpolTable()
	_ = os.RemoveAll(np.dir)
	if left := np.Leftovers(); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("kube-network-policies left: %s", strings.Join(left, "; ")))
	}
	return err
}

// Leftovers lists what of the daemon remains: its process, its table,
// its credentials' directory.
func (np *NetworkPolicies) Leftovers() []string {
	var out []string
	if np.p != nil && !np.p.exited() {
		out = append(out, fmt.Sprintf("process %d", np.p.cmd.Process.Pid))
	}
	if netpolTableExists() {
		out = append(out, "nftables table inet "+NetpolTable)
	}
	if exists(np.dir) {
		out = append(out, "directory "+np.dir)
	}
	return out
}

func netpolTableExists() bool {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return false
	}
	return exec.Command(nft, "list", "table", "inet", NetpolTable).Run() == nil
}

// netpolTableRules is the daemon's table as nft prints it ("" when
// there is none).
func netpolTableRules() string {
	out, err := exec.Command("nft", "list", "table", "inet", NetpolTable).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func deleteNetpolTable() error {
	if !netpolTableExists() {
		return nil
	}
	if out, err := exec.Command("nft", "delete", "table", "inet", NetpolTable).CombinedOutput(); err != nil {
		return fmt.Errorf("delete nftables table inet %s: %w: %s", NetpolTable, err, strings.TrimSpace(string(out)))
	}
	return nil
}
