package auth_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsOnlyState: the authenticator sits below every surface that
// asks it, reconcile/metrics included, which may not import the pod API:
// of this module it imports state alone (and so depends on nothing state
// does not), never the API, the page, the pass, a runtime, the bridge or
// the CLI (docs/architecture.md).
func TestImportsOnlyState(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the package's imports")
	const mod, pkg = "github.com/sporectl/sporectl/", "github.com/sporectl/sporectl/mycelia/auth"
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	require.NoError(t, err, "go list %s: %s", pkg, out)
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, mod) {
			require.Equal(t, mod+"state", imp, "mycelia/auth imports %s: only state is allowed", imp)
		}
	}
}
