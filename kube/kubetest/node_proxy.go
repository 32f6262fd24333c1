package kubetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Services on the node: kube-proxy (iptables mode) turns each Service's
// ClusterIP into DNAT rules, so pods reach serve at its Service. The
// range is in the benchmarking block 198.18.0.0/15, beside the pod
// subnet and away from PodHost's 198.18.0.0/16: the rules live in the
// machine's own nat table, so no address a real network uses may be one.
const (
	ServiceCIDR = "198.19.96.0/20"
	// KubernetesServiceIP is the first address of ServiceCIDR: the
	// `kubernetes` Service, which in-cluster clients dial.
	KubernetesServiceIP = "198.19.96.1"
)

// routeServices keeps the Services' range on the machine: a ClusterIP
// kube-proxy has a rule for is rewritten before routing, and any other
// address of the range (nothing answers it) goes to the bridge and no
// further, instead of out through the machine's default route. The route
// goes with the bridge.
func routeServices() error {
	if err := ip("route", "replace", ServiceCIDR, "dev", nodeBridge); err != nil {
		return fmt.Errorf("route the Services' range to the node's bridge: %w", err)
	}
	return nil
}

// startKubeProxy runs kube-proxy in iptables mode for the node. It changes
// no sysctl: conntrack limits and timeouts are left as they are (0), and
// localhost NodePorts are off (they set route_localnet); NodePorts, if a
// test made one, answer only on the bridge's address.
func (n *Node) startKubeProxy() error {
	bin, err := NodeBinary("kube-proxy")
	if err != nil {
		return err
	}
	return n.spawn(bin, "--kubeconfig="+n.Kubeconfig, "--hostname-override="+n.Name,
		"--proxy-mode=iptables", "--cluster-cidr="+nodeSubnet, "--detect-local-mode=ClusterCIDR",
		"--nodeport-addresses="+nodeIP+"/32", "--iptables-localhost-nodeports=false",
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		// No health or metrics server: nothing asks, and their fixed
		// default ports could be taken.
		"--healthz-bind-address=", "--metrics-bind-address=", "--v=1")
}

// cleanupKubeProxy removes every rule and chain kube-proxy made (its
// --cleanup mode: iptables, ip6tables, and nftables where there is any).
// kube-proxy must be stopped first, or it writes them again.
//
// The chains it leaves are removed too, unless the machine had KUBE-
// chains before the node (hadChains): those are someone else's.
func (n *Node) cleanupKubeProxy(ctx context.Context, hadChains bool) error {
	bin, err := NodeBinary("kube-proxy")
	if err != nil {
		return nil // never built, so never run
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--cleanup", "--v=0")
	cmd.Env = append(cmd.Environ(), "PATH="+n.binDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	// --cleanup leaves KUBE-FIREWALL (and its jumps from INPUT and
	// OUTPUT), which kube-proxy makes too.
	if hadChains {
		return nil
	}
	for _, t := range []string{"iptables", "ip6tables"} {
		removeKubeChains(ctx, t)
	}
	if left := kubeletChains(); len(left) > 0 {
		return fmt.Errorf("kube-proxy's rules are still there (%s); kube-proxy --cleanup: %v: %s",
			strings.Join(left, ", "), err, tailString(string(out), 2000))
	}
	return nil
}

// removeKubeChains deletes, in every table of tool (iptables or
// ip6tables), the rules that jump to a KUBE- chain from another chain,
// then flushes and deletes every KUBE- chain. Only the node's harness
// calls it, and only for chains the machine did not have before.
func removeKubeChains(ctx context.Context, tool string) {
	out, err := exec.CommandContext(ctx, tool+"-save").Output()
	if err != nil {
		return // no such tool, or no such family here
	}
	type rule struct{ table, spec string }
	var jumps []rule
	chains := map[string][]string{}
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":KUBE-"):
			chains[table] = append(chains[table], strings.Fields(line[1:])[0])
		case strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A KUBE-") && strings.Contains(line, " -j KUBE-"):
			jumps = append(jumps, rule{table, line[3:]})
		}
	}
	for _, r := range jumps {
		// iptables-save quotes an argument with spaces (a comment):
		// splitRule gives it back as one argument.
		_ = exec.CommandContext(ctx, tool, append([]string{"-t", r.table, "-D"}, splitRule(r.spec)...)...).Run()
	}
	for t, cs := range chains {
		for _, c := range cs {
			_ = exec.CommandContext(ctx, tool, "-t", t, "-F", c).Run()
		}
		for _, c := range cs {
			_ = exec.CommandContext(ctx, tool, "-t", t, "-X", c).Run()
		}
	}
}

// splitRule splits an iptables-save rule into arguments, honouring its
// double quotes.
func splitRule(spec string) []string {
	var args []string
	var cur strings.Builder
	quoted, any := false, false
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		switch {
		case c == '\\' && quoted && i+1 < len(spec):
			i++
			cur.WriteByte(spec[i])
		case c == '"':
			quoted, any = !quoted, true
		case c == ' ' && !quoted:
			if cur.Len() > 0 || any {
				args = append(args, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 || any {
		args = append(args, cur.String())
	}
	return args
}

func tailString(s string, max int) string {
	if len(s) > max {
		return s[len(s)-max:]
	}
	return s
}

// apiRelay makes the API server, which listens on loopback only, reachable
// from pods at the node's address on the same port: the address the
// kubernetes Service's endpoints name (--advertise-address), so an
// in-cluster client reaches it through its ClusterIP and kube-proxy.
func (n *Node) apiRelay() error {
	u, err := url.Parse(n.Config.Host)
	if err != nil {
		return fmt.Errorf("the API server's address %q: %w", n.Config.Host, err)
	}
	r, err := startRelay(net.JoinHostPort(nodeIP, u.Port()), u.Host)
	if err != nil {
		return fmt.Errorf("relay the API server to the pods: %w", err)
	}
	n.relays = append(n.relays, r)
	return nil
}

// ForwardToPods listens on the node's address (a free port) and forwards
// each connection to target, a server of the test's on this machine (a
// PostgreSQL on loopback, say), so pods reach it; it returns the address
// pods dial. It stops with the node, or when tb ends.
func (n *Node) ForwardToPods(tb testing.TB, target string) string {
	tb.Helper()
	r, err := startRelay(net.JoinHostPort(nodeIP, "0"), target)
	mustf(tb, err, "forward %s to the pods", target)
	n.relays = append(n.relays, r)
	tb.Cleanup(r.Close)
	return r.ln.Addr().String()
}

// relay forwards TCP connections from one address to another.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

func startRelay(listen, target string) (*relay, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		r.wg.Add(1)
		go r.pipe(c)
	}
}

// track records a connection to be closed with the relay; false when the
// relay is closing already.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = true
	return true
}

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
	}
}

func (r *relay) pipe(in net.Conn) {
	defer r.wg.Done()
	defer in.Close()
	if !r.track(in) {
		return
	}
	out, err := net.DialTimeout("tcp", r.target, 10*time.Second)
	if err != nil {
		r.untrack(in)
		return
	}
	defer out.Close()
	if !r.track(out) {
		r.untrack(in)
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
	r.untrack(in, out)
}

// Close stops accepting, ends every relayed connection and waits for
// them. Safe to call more than once.
func (r *relay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	_ = r.ln.Close()
	r.wg.Wait()
}
