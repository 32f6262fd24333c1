package outbox

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsBelowThePass keeps the package doc's rule: recording a
// message needs the model (state), the rules it is admitted and judged
// by (reconcile/policy), the wake that delivers it (reconcile/wish), the
// bridge's bound (bridge) and small libraries
// (internal/...), and nothing of the pass that calls it (reconcile), the
// pod-facing API or the CLI (docs/architecture.md).
func TestImportsBelowThePass(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the package's imports")
	const module = "github.com/sporectl/sporectl/"
	const pkg = module + "reconcile/outbox"
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	require.NoError(t, err, "go list %s: %s", pkg, out)
	allowed := map[string]bool{module + "state": true, module + "reconcile/policy": true, module + "reconcile/wish": true, module + "bridge": true}
	for _, d := range strings.Fields(string(out)) {
		if !strings.HasPrefix(d, module) || strings.HasPrefix(d, module+"internal/") {
			continue
		}
		require.True(t, allowed[d], "%s imports %s: only state, reconcile/policy, reconcile/wish, bridge and internal/... are below it", pkg, d)
	}
	out, err = exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, module+"reconcile/wish")
	for _, d := range deps {
		require.NotEqual(t, module+"reconcile", d, "%s depends on the pass", pkg)
		for _, p := range []string{module + "mycelia", module + "cmd/"} {
			require.False(t, strings.HasPrefix(d, p), "%s depends on %s", pkg, d)
		}
	}
}
