package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the real-node test calls a refusal by the policy is the sum of
// kube-router's REJECT rules' packet counters: not its NFLOG rules, not
// another chain's REJECT (a firewall of the machine's), and a counter
// that cannot be read is an error, not 0.
func TestRejectedCountsOnlyKubeRoutersRejects(t *testing.T) {
	save := `*filter
:KUBE-POD-FW-ABC - [0:0]
[7:420] -A KUBE-POD-FW-ABC -m comment --comment "rule to log dropped traffic POD name:a namespace: n" -m mark ! --mark 0x10000/0x10000 -m limit --limit 10/min --limit-burst 10 -j NFLOG --nflog-group 100
[3:180] -A KUBE-POD-FW-ABC -m comment --comment "rule to REJECT traffic destined for POD name:a namespace: n" -m mark ! --mark 0x10000/0x10000 -j REJECT --reject-with icmp-port-unreachable
[2:120] -A KUBE-POD-FW-DEF -m comment --comment "rule to REJECT traffic destined for POD name:b namespace: n" -m mark ! --mark 0x10000/0x10000 -j REJECT --reject-with icmp-port-unreachable
[9:540] -A INPUT -p tcp --dport 22 -j REJECT --reject-with tcp-reset
[5:300] -A KUBE-ROUTER-FORWARD -m comment --comment "rule to jump traffic" -s 198.19.77.3/32 -j KUBE-POD-FW-ABC
COMMIT
`
	n, err := rejectedIn(save)
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)

	_, err = rejectedIn("[x:y] -A KUBE-POD-FW-ABC -j REJECT\n")
	assert.Error(t, err, "an unreadable counter is an error")
}

// Without its binary, or when it exits at once, kube-router is an error
// that says why (how to build it; its own last words), and nothing of it
// is left: no process, no rule, no ipset.
func TestStartNetworkPoliciesFaults(t *testing.T) {
	t.Run("no binary", func(t *testing.T) {
		t.Setenv(EnvNodeBinDir, t.TempDir())
		_, err := (&Node{}).StartNetworkPolicies(t.Context())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "real-node.sh")
	})
	t.Run("exits at once", func(t *testing.T) {
		if os.Geteuid() != 0 {
			if inCI() {
				t.Fatal("CI is set but the enforcer's fault test needs root (iptables, ipset)")
			}
			t.Skip("needs root (iptables, ipset)")
		}
		for _, tool := range enforcerTools {
			if _, err := exec.LookPath(tool); err != nil {
				if inCI() {
					t.Fatalf("CI is set but %s is missing: %v", tool, err)
				}
				t.Skipf("%s: %v", tool, err)
			}
		}
		// kube-router's rules are the machine's: only with the node lock
		// held, as a node's enforcer is started.
		lock, err := lockNode(t.Context())
		require.NoError(t, err)
		defer lock.Close()
		bin := t.TempDir()
		script := "#!/bin/sh\necho 'F1207 failed to get node object: no such node' >&2\nexit 3\n"
		require.NoError(t, os.WriteFile(filepath.Join(bin, "kube-router"), []byte(script), 0o755))
		t.Setenv(EnvNodeBinDir, bin)
		n := &Node{Server: &Server{Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}, Name: "nowhere", dir: t.TempDir()}
		np, err := n.StartNetworkPolicies(t.Context(), "198.19.77.250")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "kube-router exited")
		assert.Contains(t, err.Error(), "no such node", "its last words are in the error")
		require.NotNil(t, np)
		assert.Empty(t, np.Leftovers())
	})
}
