package auth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestImportsOnlyState: the authenticator sits below every surface that
// asks it, reconcile/metrics included, which may not import the pod API:
// of this module it imports state alone (and so depends on nothing state
// does not), never the API, the page, the pass, a runtime, the bridge or
// the CLI (docs/architecture.md).
func TestImportsOnlyState(t *testing.T) {
	for _, imp := range golint.Imports(t, "mycelia/auth") {
		if strings.HasPrefix(imp, golint.Module+"/") {
			require.Equal(t, golint.Module+"/state", imp, "mycelia/auth imports %s: only state is allowed", imp)
		}
	}
}
