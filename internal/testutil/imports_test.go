package testutil_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// helpers are the packages of test support that the binary must not link.
var helpers = []string{
	"github.com/sporectl/sporectl/internal/testutil",
	"github.com/sporectl/sporectl/reconcile/reconciletest",
}

// TestOnlyTestsImportTestHelpers: no package of the module but another
// helper imports a test helper; its _test.go files may.
func TestOnlyTestsImportTestHelpers(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the packages' imports")
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/sporectl/sporectl/...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		seen++
		if helper(pkg) {
			continue
		}
		for _, h := range helpers {
			require.NotContains(t, imports, h, "%s imports the test helper %s outside its tests", pkg, h)
		}
	}
	require.Greater(t, seen, 10, "go list lists the module's packages")
}

// helper reports whether pkg is test support itself (statetest,
// reconciletest, kubetest, testutil…), which may build on another.
func helper(pkg string) bool {
	base := path.Base(pkg)
	return strings.HasSuffix(base, "test") || base == "testutil"
}
