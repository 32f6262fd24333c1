package reconcile_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRuntimesImportNeitherAPINorCLI: the runtimes sit under the pass
// that consumes them, not on top of the pod-facing API or the CLI. What
// they need of those (the host types, the agent's identity text, the
// spores' environment names) comes from reconcile, from Start's
// arguments and from bridge/sporeenv (docs/architecture.md).
func TestRuntimesImportNeitherAPINorCLI(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the runtimes' imports")
	for _, rt := range []string{"kube", "local"} {
		pkg := "github.com/sporectl/sporectl/" + rt
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, pkg, "go list -deps lists the package itself")
		for _, c := range []struct{ what, prefix string }{
			{"the pod-facing API", "github.com/sporectl/sporectl/mycelia"},
			{"the CLI", "github.com/sporectl/sporectl/cmd/"},
		} {
			for _, d := range deps {
				require.False(t, strings.HasPrefix(d, c.prefix), "%s imports %s (%s)", rt, c.what, d)
			}
		}
	}
}
