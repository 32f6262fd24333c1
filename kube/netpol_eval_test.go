package kube_test

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The test API server has no CNI, so nothing enforces a NetworkPolicy
// there. netpolCluster decides what an enforcing CNI must decide, from the
// NetworkPolicy API's documented semantics (k8s.io/api/networking/v1 and
// https://kubernetes.io/docs/concepts/services-networking/network-policies/):
//
//   - a pod is isolated in a direction when a policy of its own namespace
//     selects it (podSelector) and lists that direction in policyTypes
//     (empty policyTypes: Ingress, plus Egress when it has egress rules);
//     a pod no policy isolates allows everything in that direction;
//   - a connection is allowed when the source's egress and the
//     destination's ingress both allow it: some rule of some selecting
//     policy matches the peer (no peers: every peer) and the port (no
//     ports: every port; protocol TCP by default; a named port is the
//     destination pod's container port of that name; endPort makes a
//     range);
//   - a peer with only podSelector means pods of the policy's namespace;
//     with namespaceSelector, pods of the namespaces whose labels match
//     (and, with both, pods matching podSelector there); ipBlock means
//     addresses in cidr and in none of except.
//
// Whether ipBlock applies to pod IPs is left to the implementation
// (Calico matches them, Cilium does not). This evaluator matches them,
// the reading that allows more, so what it denies is denied by either.
// Traffic from a pod's own node (kubelet probes) is always allowed and
// not modelled here.
type netpolCluster struct {
	namespaces map[string]labels.Set // namespace name -> its labels, as stored
	policies   []networkingv1.NetworkPolicy
}

// netEnd is one side of a connection: a pod as the API server stores it
// (its IP from status), or an address outside the cluster (pod nil).
type netEnd struct {
	pod *corev1.Pod
	ip  netip.Addr
}

func podEnd(p *corev1.Pod) netEnd {
	return netEnd{pod: p, ip: netip.MustParseAddr(p.Status.PodIP)}
}

func addrEnd(ip string) netEnd { return netEnd{ip: netip.MustParseAddr(ip)} }

func (e netEnd) String() string {
	if e.pod != nil {
		return e.pod.Namespace + "/" + e.pod.Name + " (" + e.ip.String() + ")"
	}
	return e.ip.String()
}

// allows reports whether from may open a connection to to's port, and
// why not when it may not.
func (c netpolCluster) allows(from, to netEnd, proto corev1.Protocol, port int32) (bool, string) {
	if ok, why := c.direction(networkingv1.PolicyTypeEgress, from, to, to, proto, port); !ok {
		return false, why
	}
	return c.direction(networkingv1.PolicyTypeIngress, to, from, to, proto, port)
}

// direction decides for the isolated side self whether peer is admitted;
// dst is the connection's destination, whose container ports name ports.
func (c netpolCluster) direction(dir networkingv1.PolicyType, self, peer, dst netEnd, proto corev1.Protocol, port int32) (bool, string) {
	if self.pod == nil {
		return true, "" // outside the cluster: no policy applies
	}
	var isolating []string
	for _, np := range c.policies {
		if np.Namespace != self.pod.Namespace || !selectorMatches(&np.Spec.PodSelector, self.pod.Labels) || !hasType(np, dir) {
			continue
		}
		isolating = append(isolating, np.Name)
		for _, r := range rules(np, dir) {
			if c.peersMatch(np.Namespace, r.peers, peer) && portsMatch(r.ports, dst, proto, port) {
				return true, ""
			}
		}
	}
	if len(isolating) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("%s of %s is isolated by %s and no rule admits %s %s/%d",
		strings.ToLower(string(dir)), self, strings.Join(isolating, ", "), peer, proto, port)
}

type netRule struct {
	peers []networkingv1.NetworkPolicyPeer
	ports []networkingv1.NetworkPolicyPort
}

func rules(np networkingv1.NetworkPolicy, dir networkingv1.PolicyType) []netRule {
	var out []netRule
	if dir == networkingv1.PolicyTypeIngress {
		for _, r := range np.Spec.Ingress {
			out = append(out, netRule{r.From, r.Ports})
		}
		return out
	}
	for _, r := range np.Spec.Egress {
		out = append(out, netRule{r.To, r.Ports})
	}
	return out
}

func hasType(np networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	types := np.Spec.PolicyTypes
	if len(types) == 0 {
		types = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			types = append(types, networkingv1.PolicyTypeEgress)
		}
	}
	for _, t := range types {
		if t == dir {
			return true
		}
	}
	return false
}

func (c netpolCluster) peersMatch(policyNS string, peers []networkingv1.NetworkPolicyPeer, e netEnd) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if c.peerMatches(policyNS, p, e) {
			return true
		}
	}
	return false
}

func (c netpolCluster) peerMatches(policyNS string, p networkingv1.NetworkPolicyPeer, e netEnd) bool {
	if p.IPBlock != nil {
		if !prefix(p.IPBlock.CIDR).Contains(e.ip) {
			return false
		}
		for _, ex := range p.IPBlock.Except {
			if prefix(ex).Contains(e.ip) {
				return false
			}
		}
		return true
	}
	if e.pod == nil {
		return false // selectors name pods; an outside address is none
	}
	if p.NamespaceSelector == nil {
		if e.pod.Namespace != policyNS {
			return false
		}
	} else if !selectorMatches(p.NamespaceSelector, c.namespaces[e.pod.Namespace]) {
		return false
	}
	return p.PodSelector == nil || selectorMatches(p.PodSelector, e.pod.Labels)
}

func portsMatch(ports []networkingv1.NetworkPolicyPort, dst netEnd, proto corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		want := corev1.ProtocolTCP
		if p.Protocol != nil {
			want = *p.Protocol
		}
		if want != proto {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String:
			if dst.pod != nil && containerPort(dst.pod, p.Port.StrVal, proto) == port {
				return true
			}
		case p.EndPort != nil:
			if port >= p.Port.IntVal && port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port:
			return true
		}
	}
	return false
}

// containerPort is the number of pod's port name, 0 when it has none.
func containerPort(pod *corev1.Pod, name string, proto corev1.Protocol) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == name && pp == proto {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// selectorMatches panics on a selector the API server would have refused,
// since every selector here was read back from it.
func selectorMatches(ls *metav1.LabelSelector, l labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		panic(fmt.Sprintf("a stored selector does not parse: %v", err))
	}
	return s.Matches(l)
}

func prefix(cidr string) netip.Prefix {
	return netip.MustParsePrefix(cidr)
}
