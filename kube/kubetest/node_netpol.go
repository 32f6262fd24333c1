package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/internal/childproc"
)

// NetworkPolicies is the node's NetworkPolicy enforcer: kube-router's
// network policy controller alone (its firewall; no routing, no service
// proxy, which the node's bridge and kube-proxy already do), run on the
// node as a host process. It programs the machine's iptables filter table
// (through iptables-nft here) and ipsets: every pod of the node gets a
// chain its forwarded, input and output packets pass, which jumps to one
// chain per policy that selects the pod, and REJECTs what none allows.
// Pods on the node's bridge are judged too: the bridge hands its frames
// to iptables (net.bridge.bridge-nf-call-iptables) and kube-router
// matches them with physdev.
//
// kube-router v2.1.0 has published security flaws (in its BGP and proxy
// parts, and its own dependencies'); it never leaves this harness: it is
// a test's enforcer, built by .ci/real-node.sh, not something sporectl
// ships or recommends.
type NetworkPolicies struct {
	n       *Node
	p       *proc
	logPath string
	stopped bool
}

// The prefixes of what kube-router's policy controller makes: its
// top-level chains (jumped to from INPUT, FORWARD and OUTPUT), one chain
// per pod and per policy, and the ipsets its policy chains match.
var (
	kubeRouterChainPrefixes = []string{"KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-"}
	kubeRouterSetPrefixes   = []string{"KUBE-SRC-", "KUBE-DST-"}
)

// enforcerTools are what kube-router runs to program the kernel (Debian's
// iptables and ipset, installed by .ci/real-node.sh).
var enforcerTools = []string{"iptables", "iptables-save", "iptables-restore", "ipset"}

// StartNetworkPolicies runs kube-router's firewall against the node's API
// server and waits until it has a chain for each of the pods named by
// their addresses (podIPs: the pods the test will judge), so no packet
// of theirs is sent before their rules exist.
func (n *Node) StartNetworkPolicies(ctx context.Context, podIPs ...string) (np *NetworkPolicies, err error) {
	bin, err := NodeBinary("kube-router")
	if err != nil {
		return nil, err
	}
	for _, tool := range enforcerTools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("kube-router programs the kernel with %s (Debian's iptables and ipset, installed by .ci/real-node.sh): %w", tool, err)
		}
	}
	// A run that was killed left its rules (the node lock is held, so
	// they are no other node's).
	if err := removeKubeRouterRules(); err != nil {
		return nil, fmt.Errorf("remove the rules of a kube-router that did not stop: %w", err)
	}
	np = &NetworkPolicies{n: n, logPath: filepath.Join(n.dir, "kube-router.log")}
	logFile, err := os.Create(np.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
		"--kubeconfig="+n.Kubeconfig, "--hostname-override="+n.Name,
		// Traffic to a ClusterIP is judged after kube-proxy rewrote it to
		// an endpoint; kube-router needs the range to tell the two apart.
		"--service-cluster-ip-range="+ServiceCIDR,
		// No health or metrics server: nothing asks, and the health
		// port's fixed default could be taken.
		"--health-port=0", "--metrics-port=0",
		"--v=2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	np.p = &proc{name: "kube-router", cmd: cmd, done: make(chan struct{})}
	if err := childproc.Start(cmd, func(error) { logFile.Close(); close(np.p.done) }); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kube-router: %w", err)
	}
	n.spawnedPIDs = append(n.spawnedPIDs, cmd.Process.Pid)
	defer func() {
		if err != nil {
			if serr := np.Stop(); serr != nil {
				err = fmt.Errorf("%w (and stopping it: %v)", err, serr)
			}
		}
	}()
	return np, np.waitPods(ctx, podIPs, time.Minute)
}

// waitPods waits until kube-router has programmed a firewall chain for
// each address: a rule of its top-level chains naming it.
func (np *NetworkPolicies) waitPods(ctx context.Context, podIPs []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		rules := kubeRouterRules()
		missing := []string{}
		for _, ip := range podIPs {
			if !strings.Contains(rules, ip+"/32") {
				missing = append(missing, ip)
			}
		}
		if rules != "" && len(missing) == 0 {
			return nil
		}
		if np.p.exited() {
			return fmt.Errorf("kube-router exited:\n%s", np.LogTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-router has no rules for pods %v after %s:\n%s\n%s", missing, limit, np.Dump(), np.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Sync waits until kube-router has applied what it has been told since
// the last call (a policy, a pod): it has no way to say so, so this waits
// for its rules to hold still for settle, up to limit.
func (np *NetworkPolicies) Sync(ctx context.Context, settle, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last, since := kubeRouterRules(), time.Now()
	for time.Since(since) < settle {
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-router's rules still change after %s", limit)
		case <-time.After(200 * time.Millisecond):
		}
		if np.p.exited() {
			return fmt.Errorf("kube-router exited:\n%s", np.LogTail())
		}
		if now := kubeRouterRules(); now != last {
			last, since = now, time.Now()
		}
	}
	return nil
}

// Rejected is how many packets kube-router's REJECT rules have refused
// so far, over every pod's chain: a connection the policy denies adds to
// it, one refused by a closed port does not.
func (np *NetworkPolicies) Rejected() (int64, error) {
	out, err := exec.Command("iptables-save", "-c", "-t", "filter").Output()
	if err != nil {
		return 0, fmt.Errorf("read the filter table's counters: %w", err)
	}
	return rejectedIn(string(out))
}

// rejectedIn sums the packet counters of kube-router's REJECT rules in
// iptables-save -c output.
func rejectedIn(save string) (int64, error) {
	var total int64
	for _, line := range strings.Split(save, "\n") {
		// [packets:bytes] -A KUBE-POD-FW-… … -j REJECT --reject-with …
		counters, rule, ok := strings.Cut(line, "] -A ")
		if !ok || !hasAnyPrefix(rule, kubeRouterChainPrefixes) || !strings.Contains(rule, " -j REJECT") {
			continue
		}
		var pkts, bytes int64
		if _, err := fmt.Sscanf(counters, "[%d:%d", &pkts, &bytes); err != nil {
			return 0, fmt.Errorf("counters of %q: %w", line, err)
		}
		total += pkts
	}
	return total, nil
}

// Dump is what kube-router programmed: its chains of the filter table,
// the jumps to them, and its ipsets with their members. For a failing
// test's log.
func (np *NetworkPolicies) Dump() string {
	var b strings.Builder
	b.WriteString("kube-router's iptables rules (filter table, with counters):\n")
	out, err := exec.Command("iptables-save", "-c", "-t", "filter").CombinedOutput()
	if err != nil {
		fmt.Fprintf(&b, "iptables-save: %v: %s\n", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "KUBE-ROUTER-") || strings.Contains(line, "KUBE-POD-FW-") || strings.Contains(line, "KUBE-NWPLCY-") {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("kube-router's ipsets:\n")
	for _, set := range kubeRouterSets() {
		out, err := exec.Command("ipset", "list", set).CombinedOutput()
		if err != nil {
			fmt.Fprintf(&b, "ipset list %s: %v\n", set, err)
		}
		b.Write(out)
	}
	return b.String()
}

// LogTail is the end of kube-router's log, for failure output.
func (np *NetworkPolicies) LogTail() string {
	b, _ := os.ReadFile(np.logPath)
	s := string(b)
	const max = 4000
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return s
}

// Stop ends kube-router (SIGTERM; SIGKILL after a grace) and removes
// its rules and ipsets: on its own it leaves them, to keep pods isolated
// across a restart. Safe to call more than once; Leftovers then says what
// remains.
func (np *NetworkPolicies) Stop() error {
	if np == nil || np.stopped {
		return nil
	}
	np.stopped = true
	if np.p != nil {
		_ = np.p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-np.p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-np.p.cmd.Process.Pid, syscall.SIGKILL)
			<-np.p.done
		}
	}
	err := removeKubeRouterRules()
	if left := np.Leftovers(); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("kube-router left: %s", strings.Join(left, "; ")))
	}
	return err
}

// Leftovers lists what of kube-router remains: its process, its chains,
// its ipsets.
func (np *NetworkPolicies) Leftovers() []string {
	var out []string
	if np.p != nil && !np.p.exited() {
		out = append(out, fmt.Sprintf("process %d", np.p.cmd.Process.Pid))
	}
	for _, c := range kubeRouterChains() {
		out = append(out, "iptables chain "+c)
	}
	for _, s := range kubeRouterSets() {
		out = append(out, "ipset "+s)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// kubeRouterRules is every line of the filter table that is kube-router's
// or jumps to it ("" when there is none).
func kubeRouterRules() string {
	out, err := exec.Command("iptables-save", "-t", "filter").Output()
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		for _, p := range kubeRouterChainPrefixes {
			if strings.Contains(line, p) {
				b.WriteString(line + "\n")
				break
			}
		}
	}
	return b.String()
}

func kubeRouterChains() []string {
	out, err := exec.Command("iptables-save", "-t", "filter").Output()
	if err != nil {
		return nil
	}
	var chains []string
	for _, line := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(line, ":"); ok && hasAnyPrefix(c, kubeRouterChainPrefixes) {
			chains = append(chains, strings.Fields(c)[0])
		}
	}
	return chains
}

func kubeRouterSets() []string {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil
	}
	var sets []string
	for _, s := range strings.Fields(string(out)) {
		if hasAnyPrefix(s, kubeRouterSetPrefixes) {
			sets = append(sets, s)
		}
	}
	return sets
}

// removeKubeRouterRules deletes the jumps to kube-router's chains from
// the built-in ones, then its chains, then its ipsets (a set in use by a
// rule cannot go). Only the node's harness calls it, with the node lock
// held: the names are kube-router's own and no other run's.
func removeKubeRouterRules() error {
	out, err := exec.Command("iptables-save", "-t", "filter").Output()
	if err != nil {
		return fmt.Errorf("read the filter table: %w", err)
	}
	var errs []error
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out))))
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		rule, ok := strings.CutPrefix(line, "-A ")
		if !ok {
			continue
		}
		chain, _, _ := strings.Cut(rule, " ")
		if hasAnyPrefix(chain, kubeRouterChainPrefixes) || !strings.Contains(rule, "-j KUBE-ROUTER-") {
			continue
		}
		run("iptables", append([]string{"-t", "filter", "-D"}, splitRule(rule)...)...)
	}
	chains := kubeRouterChains()
	for _, c := range chains {
		run("iptables", "-t", "filter", "-F", c)
	}
	for _, c := range chains {
		run("iptables", "-t", "filter", "-X", c)
	}
	for _, s := range kubeRouterSets() {
		run("ipset", "destroy", s)
	}
	return errors.Join(errs...)
}
