package outbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestImportsBelowThePass keeps the package doc's rule: recording a
// message needs the model (state), the rules it is admitted and judged
// by (reconcile/policy), the wake that delivers it (reconcile/wish), the
// bridge's bound (bridge) and small libraries
// (internal/...), and nothing of the pass that calls it (reconcile), the
// pod-facing API or the CLI (docs/architecture.md).
func TestImportsBelowThePass(t *testing.T) {
	const module = golint.Module + "/"
	const pkg = module + "reconcile/outbox"
	allowed := map[string]bool{module + "state": true, module + "reconcile/policy": true, module + "reconcile/wish": true, module + "bridge": true}
	for _, d := range golint.Imports(t, "reconcile/outbox") {
		if !strings.HasPrefix(d, module) || strings.HasPrefix(d, module+"internal/") {
			continue
		}
		require.True(t, allowed[d], "%s imports %s: only state, reconcile/policy, reconcile/wish, bridge and internal/... are below it", pkg, d)
	}
	deps := golint.Deps(t, "reconcile/outbox")
	require.Contains(t, deps, module+"reconcile/wish")
	for _, d := range deps {
		require.NotEqual(t, module+"reconcile", d, "%s depends on the pass", pkg)
		for _, p := range []string{module + "mycelia", module + "cmd/"} {
			require.False(t, strings.HasPrefix(d, p), "%s depends on %s", pkg, d)
		}
	}
}
