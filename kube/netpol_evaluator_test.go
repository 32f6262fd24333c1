package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The evaluator the NetworkPolicy tests rely on gets each rule of the API
// right on policies small enough to decide by hand, so a verdict of the
// real test is the API's and not an evaluator bug.
func TestNetpolEvaluatorFollowsTheAPI(t *testing.T) {
	pod := func(ns, name, ip string, l map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}},
			Status:     corev1.PodStatus{PodIP: ip},
		}
	}
	a := podEnd(pod("a", "web", "10.1.0.1", map[string]string{"role": "web"}, corev1.ContainerPort{Name: "http", ContainerPort: 8080}))
	db := podEnd(pod("a", "db", "10.1.0.2", map[string]string{"role": "db"}))
	other := podEnd(pod("b", "web", "10.2.0.1", map[string]string{"role": "web"}))
	outside := addrEnd("203.0.113.9")
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(p intstr.IntOrString) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: &p}
	}
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	policy := func(ns string, spec networkingv1.NetworkPolicySpec) networkingv1.NetworkPolicy {
		return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: spec}
	}
	end := int32(9000)
	webIngress := func(peers []networkingv1.NetworkPolicyPeer, ports ...networkingv1.NetworkPolicyPort) networkingv1.NetworkPolicySpec {
		return networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web"), Ingress: []networkingv1.NetworkPolicyIngressRule{{From: peers, Ports: ports}}}
	}
	namespaces := map[string]labels.Set{"a": {"team": "x"}, "b": {"team": "y"}}

	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		from, to netEnd
		proto    corev1.Protocol
		port     int32
		allow    bool
	}{
		{"no policy allows", nil, db, a, tcp, 1, true},
		{"a policy with no rules isolates", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web")})}, db, a, tcp, 1, false},
		{"empty policyTypes: egress is not isolated by an ingress-only policy", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web")})}, a, db, tcp, 1, true},
		{"a policy of another namespace does not isolate", []networkingv1.NetworkPolicy{policy("b", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web")})}, db, a, tcp, 1, true},
		{"podSelector peer: same namespace", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "db")}}))}, db, a, tcp, 1, true},
		{"podSelector peer: not another namespace", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "web")}}))}, other, a, tcp, 1, false},
		{"namespaceSelector peer", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "y")}}))}, other, a, tcp, 1, true},
		{"namespaceSelector and podSelector: both must match", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "y"), PodSelector: sel("role", "db")}}))}, other, a, tcp, 1, false},
		{"selectors never match an outside address", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}))}, outside, a, tcp, 1, false},
		{"ipBlock", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24"}}}))}, outside, a, tcp, 1, true},
		{"ipBlock except", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"203.0.113.0/28"}}}}))}, outside, a, tcp, 1, false},
		{"ipBlock matches pod IPs (the permissive reading)", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.2.0.0/16"}}}))}, other, a, tcp, 1, true},
		{"IPv4 block does not hold IPv6", []networkingv1.NetworkPolicy{policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}))}, addrEnd("2001:db8::1"), a, tcp, 1, false},
		{"numbered port", []networkingv1.NetworkPolicy{policy("a", webIngress(nil, port(intstr.FromInt32(8080))))}, db, a, tcp, 8080, true},
		{"numbered port, other port", []networkingv1.NetworkPolicy{policy("a", webIngress(nil, port(intstr.FromInt32(8080))))}, db, a, tcp, 8081, false},
		{"protocol defaults to TCP", []networkingv1.NetworkPolicy{policy("a", webIngress(nil, port(intstr.FromInt32(8080))))}, db, a, udp, 8080, false},
		{"named port is the destination's", []networkingv1.NetworkPolicy{policy("a", webIngress(nil, port(intstr.FromString("http"))))}, db, a, tcp, 8080, true},
		{"endPort range", []networkingv1.NetworkPolicy{policy("a", webIngress(nil, networkingv1.NetworkPolicyPort{Port: ptrTo(intstr.FromInt32(8000)), EndPort: &end}))}, db, a, tcp, 8999, true},
		{"egress isolation", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}})}, db, outside, tcp, 443, false},
		{"egress rule with no peers: everyone on its ports", []networkingv1.NetworkPolicy{policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(443))}}}})}, db, outside, tcp, 443, true},
		{"allowed out but not in", []networkingv1.NetworkPolicy{
			policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), Egress: []networkingv1.NetworkPolicyEgressRule{{}}}),
			policy("a", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web")}),
		}, db, a, tcp, 8080, false},
		{"policies add up", []networkingv1.NetworkPolicy{
			policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "nobody")}})),
			policy("a", webIngress([]networkingv1.NetworkPolicyPeer{{PodSelector: sel("role", "db")}})),
		}, db, a, tcp, 8080, true},
	} {
		c := netpolCluster{namespaces: namespaces, policies: tc.policies}
		got, why := c.allows(tc.from, tc.to, tc.proto, tc.port)
		assert.Equal(t, tc.allow, got, "%s (%s)", tc.name, why)
		if !got {
			assert.NotEmpty(t, why, "%s: a denial says why", tc.name)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
