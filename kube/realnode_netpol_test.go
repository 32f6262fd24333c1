package kube_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state"
)

// kube/deploy's NetworkPolicies on a real node, judged by real packets:
// TCP connections opened from inside the pods' own network namespaces,
// through their veths and the node's bridge, where the enforcer sees
// them. The enforcer is kube-network-policies (nftables), run on the node
// as a host process. It queues the first packet of each connection to
// user space with nftables' queue expression; on a kernel without one
// (CONFIG_NFT_QUEUE unset, as on these machines, whose kernel also takes
// no modules) it cannot program its table: the first step then proves
// that it ran, reached the API server and was refused by the kernel, and
// the last shows that without it the ports the policy closes are open, so
// a refusal under enforcement would be the policy's and not a closed port.
func TestRealNodeNetworkPolicyWithPackets(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()
	applyDeployKinds(t, n.Server, n.Client, ns, "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy")

	// serve's stand-in: the probe's web server on serve's port, with the
	// labels the policy lets spores reach; and a stranger beside it.
	standIn := func(name string, l map[string]string) *corev1.Pod {
		p := probePod(name, "serve")
		p.Labels = l
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
		_, err := n.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		return p
	}
	standIn("serve", map[string]string{"app.kubernetes.io/name": "sporectl", "app.kubernetes.io/component": "serve"})
	standIn("stranger", nil)
	spores := realSpores(t, n, ns, spore("alpha"), spore("beta"), withRank(spore("arch"), state.RankArch, ""))
	ready := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) }
	serve := waitPod(t, n, ns, "serve", "Running and Ready", ready)
	stranger := waitPod(t, n, ns, "stranger", "Running and Ready", ready)

	var enforcer, daemon *kubetest.NetworkPolicies
	require.True(t, t.Run("kube-network-policies runs on the node, or the kernel says why it cannot", func(t *testing.T) {
		np, err := n.StartNetworkPolicies(ctx)
		daemon = np
		if np != nil {
			// Should a step fail, before the node's own teardown.
			t.Cleanup(func() { _ = np.Stop() })
		}
		if err != nil {
			// The one reason accepted: the kernel's, after the daemon ran
			// and synced with the API server. Anything else is a broken
			// harness or build.
			require.ErrorIs(t, err, kubetest.ErrNoNFTQueue, "kube-network-policies failed for another reason")
			assert.Contains(t, err.Error(), "synced with the API server", "the daemon ran and read the cluster before the kernel refused it")
			require.NotNil(t, np)
			assert.Empty(t, np.Leftovers(), "torn down: no process, no nftables table")
			first, _, _ := strings.Cut(err.Error(), "\n")
			t.Logf("not enforced on this node: %s", first)
			return
		}
		enforcer = np
	}), "each step needs the one before")

	type conn struct {
		name string
		from *corev1.Pod
		to   string // host:port
	}
	addr := func(p *corev1.Pod, port int) string { return net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)) }
	dial := func(c conn) error {
		return kubetest.DialFromNetns(ctx, podPID(t, c.from), c.to, 3*time.Second)
	}

	t.Run("allowed: a spore reaches serve, serve reaches a spore's bridge", func(t *testing.T) {
		for _, c := range []conn{
			{"alpha → serve", spores["alpha"], addr(serve, 8080)},
			{"arch → serve", spores["arch"], addr(serve, 8080)},
			{"serve → alpha's bridge", serve, addr(spores["alpha"], kube.BridgePort)},
			{"serve → arch's bridge", serve, addr(spores["arch"], kube.BridgePort)},
		} {
			assert.NoError(t, dial(c), c.name)
		}
	})

	denied := []conn{
		{"alpha → beta's bridge", spores["alpha"], addr(spores["beta"], kube.BridgePort)},
		{"beta → alpha's bridge", spores["beta"], addr(spores["alpha"], kube.BridgePort)},
		{"arch → alpha's bridge", spores["arch"], addr(spores["alpha"], kube.BridgePort)},
		{"alpha → a pod beside it that is not serve", spores["alpha"], addr(stranger, 8080)},
		{"a pod that is not serve → alpha's bridge", stranger, addr(spores["alpha"], kube.BridgePort)},
	}
	if enforcer != nil {
		t.Run("denied: the policy drops a spore's packets to another spore and anything but serve", func(t *testing.T) {
			for _, c := range denied {
				assert.Error(t, dial(c), "%s must be dropped", c.name)
			}
		})
	} else {
		t.Run("not enforced here: the ports the policy closes are open", func(t *testing.T) {
			for _, c := range denied {
				assert.NoError(t, dial(c), "%s: the port listens, so only an enforcer could refuse it", c.name)
			}
		})
	}

	// Last: the daemon and then the node go, and neither leaves anything
	// (its process, its nftables table, the node's processes, mounts,
	// bridge, cgroups, sysctls).
	t.Run("teardown leaves no daemon, no nftables table, nothing of the node", func(t *testing.T) {
		assert.NoError(t, daemon.Stop())
		assert.Empty(t, daemon.Leftovers())
		require.NoError(t, n.Stop())
		assert.Empty(t, n.Leftovers())
	})
}
