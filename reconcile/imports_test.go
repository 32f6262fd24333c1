package reconcile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestRuntimesImportNeitherAPINorCLI: the runtimes sit under the pass
// that consumes them, not on top of the pod-facing API or the CLI. What
// they need of those (the host types, the agent's identity text, the
// spores' environment names) comes from reconcile, from Start's
// arguments and from bridge/sporeenv (docs/architecture.md).
func TestRuntimesImportNeitherAPINorCLI(t *testing.T) {
	for _, rt := range []string{"kube", "local"} {
		deps := golint.Deps(t, rt)
		for _, c := range []struct{ what, prefix string }{
			{"the pod-facing API", golint.Module + "/mycelia"},
			{"the CLI", golint.Module + "/cmd/"},
		} {
			for _, d := range deps {
				require.False(t, strings.HasPrefix(d, c.prefix), "%s imports %s (%s)", rt, c.what, d)
			}
		}
	}
}
