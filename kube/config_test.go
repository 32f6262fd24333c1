package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
)

// LoadCluster resolves files, contexts and namespaces as kubectl does,
// and the result talks to the real API server.
func TestLoadClusterLikeKubectl(t *testing.T) {
	srv := kubetest.Shared(t)
	base, err := os.ReadFile(srv.Kubeconfig)
	require.NoError(t, err)
	// Two more contexts on the same server: one naming a namespace.
	multi := strings.Replace(string(base), "contexts:\n", "contexts:\n- name: with-ns\n  context: {cluster: kubetest, user: admin, namespace: ns-from-context}\n- name: bare\n  context: {cluster: kubetest, user: admin}\n", 1)
	multiPath := filepath.Join(t.TempDir(), "multi")
	require.NoError(t, os.WriteFile(multiPath, []byte(multi), 0o600))
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config to fall back on
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	cases := []struct {
		name       string
		env        string // KUBECONFIG
		flags      kube.ConfigFlags
		wantNS     string
		wantErr    string
		shouldWork bool
	}{
		{name: "--kubeconfig", flags: kube.ConfigFlags{Kubeconfig: srv.Kubeconfig}, wantNS: "default", shouldWork: true},
		{name: "KUBECONFIG", env: srv.Kubeconfig, wantNS: "default", shouldWork: true},
		{name: "--kubeconfig beats KUBECONFIG", env: "/nonexistent/config", flags: kube.ConfigFlags{Kubeconfig: srv.Kubeconfig}, wantNS: "default", shouldWork: true},
		{name: "-n", env: srv.Kubeconfig, flags: kube.ConfigFlags{Namespace: "flagged", DefaultNamespace: "stored"}, wantNS: "flagged"},
		{name: "store default when the context names none", env: srv.Kubeconfig, flags: kube.ConfigFlags{DefaultNamespace: "stored"}, wantNS: "stored"},
		{name: "store namespace beats the context's", env: multiPath, flags: kube.ConfigFlags{Context: "with-ns", DefaultNamespace: "stored"}, wantNS: "stored", shouldWork: true},
		{name: "context namespace when the store names none", env: multiPath, flags: kube.ConfigFlags{Context: "with-ns"}, wantNS: "ns-from-context", shouldWork: true},
		{name: "--context", env: multiPath, flags: kube.ConfigFlags{Context: "bare"}, wantNS: "default", shouldWork: true},
		{name: "unknown context", env: multiPath, flags: kube.ConfigFlags{Context: "nope"}, wantErr: "nope"},
		{name: "nothing at all", env: "/nonexistent/config", wantErr: "no kubeconfig found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", c.env)
			cl, err := kube.LoadCluster(c.flags)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.wantNS, cl.Namespace)
			assert.False(t, cl.InCluster)
			assert.Equal(t, srv.Config.Host, cl.Config.Host)
			if c.shouldWork {
				cs, err := kubernetes.NewForConfig(cl.Config)
				require.NoError(t, err)
				_, err = cs.Discovery().ServerVersion()
				require.NoError(t, err, "the loaded config reaches the server")
			}
		})
	}
}
