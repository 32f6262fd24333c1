package colonyspec

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNeitherThePassNorItsCallers keeps the package doc's rule: it
// records changes through reconcile/wish and knows nothing of the pass,
// the pod-facing API or the CLI (docs/architecture.md).
func TestImportsNeitherThePassNorItsCallers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the package's imports")
	const pkg = "github.com/sporectl/sporectl/reconcile/colonyspec"
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/sporectl/sporectl/reconcile/wish")
	for _, d := range deps {
		require.NotEqual(t, "github.com/sporectl/sporectl/reconcile", d, "imports the pass")
		for _, p := range []string{"github.com/sporectl/sporectl/mycelia", "github.com/sporectl/sporectl/cmd/"} {
			require.False(t, strings.HasPrefix(d, p), "imports %s", d)
		}
	}
}
