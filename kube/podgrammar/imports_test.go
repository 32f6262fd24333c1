package podgrammar_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNothing: state checks every record with this grammar, and
// state may import neither the kube runtime (which imports state) nor
// Kubernetes' libraries, so this package imports nothing of this module
// and nothing of Kubernetes (docs/architecture.md).
func TestImportsNothing(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the package's imports")
	const pkg = "github.com/sporectl/sporectl/kube/podgrammar"
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, pkg, "go list -deps lists the package itself")
	for _, d := range deps {
		require.False(t, d != pkg && strings.HasPrefix(d, "github.com/sporectl/sporectl/"), "kube/podgrammar imports %s", d)
		require.False(t, strings.HasPrefix(d, "k8s.io/"), "kube/podgrammar imports Kubernetes (%s)", d)
	}
}
