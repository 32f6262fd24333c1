package local_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports: the runtime sits under the pass, not on top of the
// pod-facing API or the CLI. What it needs of them (the host types, the
// agent's identity text, the spores' environment names) comes from
// reconcile, from Start's arguments and from bridge/sporeenv
// (docs/architecture.md).
func TestImports(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists this package's imports")
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/sporectl/sporectl/local", "go list -deps lists the package itself")
	for _, c := range []struct{ what, prefix string }{
		{"the pod-facing API", "github.com/sporectl/sporectl/mycelia"},
		{"the CLI", "github.com/sporectl/sporectl/cmd/"},
	} {
		for _, d := range deps {
			require.False(t, strings.HasPrefix(d, c.prefix), "local imports %s (%s)", c.what, d)
		}
	}
}
