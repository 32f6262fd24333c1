package kube_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// clusterPlane is what an operator has before `kubectl apply -k
// kube/deploy` (docs/runtimes.md, "Running on a real cluster"): a
// PostgreSQL store the pods reach at the node's address, the sporectl
// CLI, kubectl, and an environment that names the store and the node's
// kubeconfig and nothing of the test's own SPORECTL_* or HOME.
type clusterPlane struct {
	n        *kubetest.Node
	cli      string
	kubectl  string
	storeURL string // as the pods dial it; it holds the store's password
	localURL string // the same database as this process dials it
	home     string

	mu  sync.Mutex
	out []string // every command's stdout and stderr, to look for secrets in
}

// newClusterPlane starts the store and builds the CLI. Without
// PostgreSQL it skips, or fails when CI is set.
func newClusterPlane(t *testing.T, n *kubetest.Node) *clusterPlane {
	t.Helper()
	ctx := t.Context()
	pg, err := pgtest.Start(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but no PostgreSQL: %v", err)
		}
		t.Skipf("no PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	_, local, err := pg.CreateDatabase(ctx)
	require.NoError(t, err)
	// The server listens on loopback; pods reach it at the node's address.
	loopback := "127.0.0.1:" + strconv.Itoa(pg.Port)
	podAddr := n.ForwardToPods(t, loopback)
	storeURL := strings.Replace(local, loopback, podAddr, 1)
	require.NotEqual(t, local, storeURL)
	kubectl, err := kubetest.Binary("kubectl")
	require.NoError(t, err)
	return &clusterPlane{n: n, cli: buildCLI(t), kubectl: kubectl, storeURL: storeURL, localURL: local, home: t.TempDir()}
}

func (p *clusterPlane) env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPORECTL_") && !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+p.home, "KUBECONFIG="+p.n.Kubeconfig, "SPORECTL_STORE="+p.storeURL)
}

// run runs a command as the operator would and returns its stdout. Its
// arguments may hold the store's password, so a failure shows only the
// command's name and output (neither holds it).
func (p *clusterPlane) run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	stdout, stderr, err := p.exec(t, bin, args...)
	require.NoError(t, err, "%s %s: %s%s", filepath.Base(bin), args[0], stdout, stderr)
	return stdout
}

// exec runs a command as run does and returns its outputs and error,
// for a command expected to fail.
func (p *clusterPlane) exec(t *testing.T, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = p.env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	p.mu.Lock()
	p.out = append(p.out, o.String(), e.String())
	p.mu.Unlock()
	return o.String(), e.String(), err
}

// outputs is every command's output so far.
func (p *clusterPlane) outputs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.out...)
}
