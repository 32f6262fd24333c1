package metrics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestImportsNeitherAPINorCLI: the metrics sit below the pod API and the
// CLI (the message routes report to them through mycelia.MessageMetrics,
// the passes through reconcile.Pass.Finished). Of mycelia they use only
// mycelia/auth, the authenticator every serve surface asks, which imports
// state alone (docs/architecture.md).
func TestImportsNeitherAPINorCLI(t *testing.T) {
	const mycelia = golint.Module + "/mycelia"
	for _, d := range golint.Deps(t, "reconcile/metrics") {
		api := d == mycelia || strings.HasPrefix(d, mycelia+"/") && d != mycelia+"/auth"
		require.False(t, api, "reconcile/metrics imports the pod-facing API (%s)", d)
		require.False(t, strings.HasPrefix(d, golint.Module+"/cmd/"), "reconcile/metrics imports the CLI (%s)", d)
	}
}
