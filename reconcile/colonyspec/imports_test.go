package colonyspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestImportsNeitherThePassNorItsCallers keeps the package doc's rule: it
// records changes through reconcile/wish and knows nothing of the pass,
// the pod-facing API or the CLI (docs/architecture.md).
func TestImportsNeitherThePassNorItsCallers(t *testing.T) {
	const module = golint.Module + "/"
	deps := golint.Deps(t, "reconcile/colonyspec")
	require.Contains(t, deps, module+"reconcile/wish")
	for _, d := range deps {
		require.NotEqual(t, module+"reconcile", d, "imports the pass")
		for _, p := range []string{module + "mycelia", module + "cmd/"} {
			require.False(t, strings.HasPrefix(d, p), "imports %s", d)
		}
	}
}
