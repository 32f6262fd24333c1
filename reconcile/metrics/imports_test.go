package metrics_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNeitherAPINorCLI: the metrics sit below the pod API and the
// CLI (the message routes report to them through mycelia.MessageMetrics,
// the passes through reconcile.Pass.Finished). Of mycelia they use only
// mycelia/auth, the authenticator every serve surface asks, which imports
// state alone (docs/architecture.md).
func TestImportsNeitherAPINorCLI(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the package's imports")
	const pkg = "github.com/sporectl/sporectl/reconcile/metrics"
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, pkg, "go list -deps lists the package itself")
	for _, d := range deps {
		api := d == "github.com/sporectl/sporectl/mycelia" || strings.HasPrefix(d, "github.com/sporectl/sporectl/mycelia/") && d != "github.com/sporectl/sporectl/mycelia/auth"
		require.False(t, api, "reconcile/metrics imports the pod-facing API (%s)", d)
		require.False(t, strings.HasPrefix(d, "github.com/sporectl/sporectl/cmd/"), "reconcile/metrics imports the CLI (%s)", d)
	}
}
