package kubetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The rules the node's teardown deletes are iptables-save's lines given
// back to iptables -D: a quoted comment must stay one argument.
func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{`INPUT -j KUBE-FIREWALL`, []string{"INPUT", "-j", "KUBE-FIREWALL"}},
		{`PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			[]string{"PREROUTING", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"}},
		{`OUTPUT -m comment --comment "a \"quoted\" word" -j KUBE-X`,
			[]string{"OUTPUT", "-m", "comment", "--comment", `a "quoted" word`, "-j", "KUBE-X"}},
		{`FORWARD -m comment --comment "" -j KUBE-FORWARD`, []string{"FORWARD", "-m", "comment", "--comment", "", "-j", "KUBE-FORWARD"}},
	} {
		assert.Equal(t, tc.want, splitRule(tc.rule), tc.rule)
	}
}
