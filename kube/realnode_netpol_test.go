package kube_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state"
)

// kube/deploy's NetworkPolicies on a real node, judged by real packets:
// TCP connections opened from inside the pods' own network namespaces,
// through their veths and the node's bridge, where the enforcer sees
// them. The enforcer is kube-router's network policy controller
// (iptables and ipset), run on the node as a host process.
//
// First, with the policies applied and no enforcer, every connection the
// policies must refuse connects: each port listens and each route
// exists. Then, under kube-router, the same connections are refused and
// each refusal is counted by its REJECT rules (a closed port would not
// be), while the allowed ones still connect in the same run.
//
// Two test-only adjustments, applied to the policies as created here
// and nowhere else: the node's whole network (pods, Services, the node's
// address) is 198.19.0.0/16, inside the benchmarking range the
// spores-internet policy excepts, so that exception is narrowed to
// 198.19.0.0/16 and a stand-in for the internet is made at a 198.18
// address on a veth this test creates; and the test API server listens
// on a random port, not 443 or 6443, so arch-api also allows that port,
// as an operator whose control plane listens elsewhere would.
func TestRealNodeNetworkPolicyWithPackets(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()
	applyDeployKinds(t, n.Server, n.Client, ns, "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
	u, err := url.Parse(n.Config.Host)
	require.NoError(t, err)
	apiPort := u.Port()
	applyTestNetworkPolicies(t, n, ns, apiPort)

	// serve's stand-in: the probe's web server on serve's port, with the
	// labels the policy lets spores reach; a stranger beside it; each
	// behind a Service of its own.
	standIn := func(name string, l map[string]string) {
		p := probePod(name, "serve")
		p.Labels = l
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
		_, err := n.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = n.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Selector: l, Ports: []corev1.ServicePort{
				{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
			}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	standIn("serve", map[string]string{"app.kubernetes.io/name": "sporectl", "app.kubernetes.io/component": "serve"})
	standIn("stranger", map[string]string{"app": "stranger"})
	// hermit's colony, sealed, has egress none.
	hermit := spore("hermit")
	hermit.Colony = "sealed"
	spores := realSporesWith(t, n, kube.Options{Namespace: ns, ColonyEgress: map[string]string{"sealed": state.EgressNone}},
		spore("alpha"), spore("beta"), withRank(spore("arch"), state.RankArch, ""), hermit)
	require.Equal(t, state.EgressNone, spores["hermit"].Labels[kube.LabelEgress])
	require.Equal(t, state.EgressAll, spores["alpha"].Labels[kube.LabelEgress])
	ready := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) }
	serve := waitPod(t, n, ns, "serve", "Running and Ready", ready)
	stranger := waitPod(t, n, ns, "stranger", "Running and Ready", ready)
	serviceIP := func(name string) string {
		svc, err := n.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return svc.Spec.ClusterIP
	}

	// The internet's stand-in: a network namespace on a veth of this
	// test's, at a 198.18 address, routed back to the node, answering
	// TCP on 443. The routes go with the namespaces.
	internet := kubetest.NewPodHost(t)
	out, err := internet.Command(ctx, "ip", "route", "add", "default", "via", internet.HostIP).CombinedOutput()
	require.NoError(t, err, "route the internet's stand-in back to the node: %s", out)
	// The node's pods have no default route (nothing is routed off the
	// machine): each spore gets one to the stand-in alone, in its own
	// network namespace, as a real cluster's pods have to the internet.
	for _, id := range []string{"alpha", "beta", "arch", "hermit"} {
		out, err := exec.CommandContext(ctx, "nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", podPID(t, spores[id])),
			"ip", "route", "add", internet.IP+"/32", "via", n.IP).CombinedOutput()
		require.NoError(t, err, "route spore %s to the internet's stand-in: %s", id, out)
	}
	ln, err := internet.Listen(443)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go acceptAndClose(ln)

	type conn struct {
		name string
		from *corev1.Pod
		to   string // host:port
	}
	addr := func(p *corev1.Pod, port int) string { return net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)) }
	hostPort := func(host string, port any) string { return net.JoinHostPort(host, fmt.Sprint(port)) }
	allowed := []conn{
		{"alpha → serve", spores["alpha"], addr(serve, 8080)},
		{"alpha → serve's Service", spores["alpha"], hostPort(serviceIP("serve"), 8080)},
		{"hermit (egress none) → serve", spores["hermit"], addr(serve, 8080)},
		{"arch → serve", spores["arch"], addr(serve, 8080)},
		{"serve → alpha's bridge", serve, addr(spores["alpha"], kube.BridgePort)},
		{"serve → beta's bridge", serve, addr(spores["beta"], kube.BridgePort)},
		{"serve → arch's bridge", serve, addr(spores["arch"], kube.BridgePort)},
		{"serve → the stranger's Service", serve, hostPort(serviceIP("stranger"), 8080)},
		{"arch → the Kubernetes API's Service", spores["arch"], hostPort(kubetest.KubernetesServiceIP, 443)},
		{"arch → the Kubernetes API at the node's address", spores["arch"], hostPort(n.IP, apiPort)},
		{"alpha → the internet", spores["alpha"], internet.IP + ":443"},
		{"beta → the internet", spores["beta"], internet.IP + ":443"},
	}
	denied := []conn{
		{"alpha → beta's bridge", spores["alpha"], addr(spores["beta"], kube.BridgePort)},
		{"beta → alpha's bridge", spores["beta"], addr(spores["alpha"], kube.BridgePort)},
		{"arch → alpha's bridge", spores["arch"], addr(spores["alpha"], kube.BridgePort)},
		{"hermit → alpha's bridge", spores["hermit"], addr(spores["alpha"], kube.BridgePort)},
		{"alpha → a pod beside it that is not serve", spores["alpha"], addr(stranger, 8080)},
		{"alpha → another Service", spores["alpha"], hostPort(serviceIP("stranger"), 8080)},
		{"a pod that is not serve → alpha's bridge", stranger, addr(spores["alpha"], kube.BridgePort)},
		{"alpha → the Kubernetes API's Service", spores["alpha"], hostPort(kubetest.KubernetesServiceIP, 443)},
		{"alpha → the Kubernetes API at the node's address", spores["alpha"], hostPort(n.IP, apiPort)},
		{"hermit → the Kubernetes API's Service", spores["hermit"], hostPort(kubetest.KubernetesServiceIP, 443)},
		{"hermit (egress none) → the internet", spores["hermit"], internet.IP + ":443"},
	}
	dial := func(c conn) error {
		return kubetest.DialFromNetns(ctx, podPID(t, c.from), c.to, 3*time.Second)
	}

	require.True(t, t.Run("no enforcer: every connection connects, so a refusal later is the policy's", func(t *testing.T) {
		// kube-proxy may still be writing the Services' rules: each gets
		// a few tries.
		for _, c := range slices.Concat(allowed, denied) {
			var err error
			for try := 0; try < 20; try++ {
				if err = dial(c); err == nil {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			assert.NoError(t, err, "%s (%s): the port listens and the route exists", c.name, c.to)
		}
	}), "the ports and routes the rest relies on")

	var np *kubetest.NetworkPolicies
	parent := t
	require.True(t, t.Run("kube-router programs the node's firewall for every pod", func(t *testing.T) {
		var ips []string
		for _, p := range []*corev1.Pod{serve, stranger, spores["alpha"], spores["beta"], spores["arch"], spores["hermit"]} {
			ips = append(ips, p.Status.PodIP)
		}
		var err error
		np, err = n.StartNetworkPolicies(ctx, ips...)
		require.NoError(t, err)
		// Should a later step fail: the test's, not this step's, and
		// before the node's own teardown.
		parent.Cleanup(func() { _ = np.Stop() })
		require.NoError(t, np.Sync(ctx, 3*time.Second, time.Minute))
	}), "each step needs the one before")
	// On a failure, what kube-router programmed, while it is still there.
	dumpOnFailure := func(t *testing.T) {
		if t.Failed() {
			t.Logf("%s\nkube-router's log:\n%s", np.Dump(), np.LogTail())
		}
	}

	t.Run("allowed: a spore reaches serve, serve its bridge, the [arch] the API, a spore of egress all the internet", func(t *testing.T) {
		defer dumpOnFailure(t)
		for _, c := range allowed {
			assert.NoError(t, dial(c), "%s (%s)", c.name, c.to)
		}
	})

	t.Run("denied: the policies refuse a spore's packets to anything else, each refusal counted by kube-router", func(t *testing.T) {
		defer dumpOnFailure(t)
		for _, c := range denied {
			before, err := np.Rejected()
			require.NoError(t, err)
			start := time.Now()
			err = dial(c)
			took := time.Since(start)
			after, rerr := np.Rejected()
			require.NoError(t, rerr)
			if !assert.Error(t, err, "%s (%s) must be refused", c.name, c.to) {
				continue
			}
			assert.Greater(t, after, before, "%s: kube-router's REJECT rules refused it (%s)", c.name, err)
			// REJECT answers at once with an ICMP port unreachable, which
			// TCP reports as refused; a time-out would be a DROP.
			assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "%s: refused, not timed out: %v after %s", c.name, err, took)
			t.Logf("%s: %s after %s, kube-router's REJECT count %d → %d", c.name, refusal(err), took.Round(time.Millisecond), before, after)
		}
	})

	t.Run("allowed again in the same run, after the refusals", func(t *testing.T) {
		defer dumpOnFailure(t)
		for _, c := range allowed {
			assert.NoError(t, dial(c), "%s (%s)", c.name, c.to)
		}
	})

	// Last: kube-router and then the node go, and neither leaves anything
	// (its process, its chains and ipsets, the node's processes, mounts,
	// bridge, cgroups, sysctls).
	t.Run("teardown leaves no enforcer, no rules, nothing of the node", func(t *testing.T) {
		assert.NoError(t, np.Stop())
		assert.Empty(t, np.Leftovers())
		require.NoError(t, n.Stop())
		assert.Empty(t, n.Leftovers())
	})
}

// applyTestNetworkPolicies creates kube/deploy's NetworkPolicies in ns
// with the two test-only adjustments TestRealNodeNetworkPolicyWithPackets
// describes; it fails when the policies no longer have what they adjust.
func applyTestNetworkPolicies(t *testing.T, n *kubetest.Node, ns, apiPort string) {
	t.Helper()
	port, err := net.LookupPort("tcp", apiPort)
	require.NoError(t, err)
	var narrowed, widened bool
	for _, o := range renderDeploy(t) {
		if o.GetKind() != "NetworkPolicy" {
			continue
		}
		moveNamespace(t, o, "sporectl", ns)
		np := &networkingv1.NetworkPolicy{}
		require.NoError(t, runtimeFromUnstructured(o, np))
		switch np.Name {
		case "spores-internet":
			for _, r := range np.Spec.Egress {
				for _, peer := range r.To {
					if b := peer.IPBlock; b != nil {
						if i := slices.Index(b.Except, "198.18.0.0/15"); i >= 0 {
							b.Except[i] = "198.19.0.0/16"
							narrowed = true
						}
					}
				}
			}
		case "arch-api":
			tcp := corev1.ProtocolTCP
			p := intstr.FromInt(port)
			np.Spec.Egress[0].Ports = append(np.Spec.Egress[0].Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p})
			widened = true
		}
		_, err := n.Client.NetworkingV1().NetworkPolicies(ns).Create(t.Context(), np, metav1.CreateOptions{})
		require.NoError(t, err, "create NetworkPolicy %s", np.Name)
	}
	require.True(t, narrowed, "spores-internet excepts 198.18.0.0/15, which the test narrows")
	require.True(t, widened, "arch-api is there, which the test widens to the API server's port")
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// refusal names how a connection failed, for the log.
func refusal(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return err.Error()
}
