package testutil_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// helpers are the packages of test support that the binary must not link.
var helpers = []string{
	golint.Module + "/internal/testutil",
	golint.Module + "/internal/testutil/golint",
	golint.Module + "/reconcile/reconciletest",
}

// TestOnlyTestsImportTestHelpers: no package of the module but another
// helper imports a test helper; its _test.go files may.
func TestOnlyTestsImportTestHelpers(t *testing.T) {
	for pkg, imports := range golint.Packages(t) {
		if helper(pkg) {
			continue
		}
		for _, h := range helpers {
			require.NotContains(t, imports, h, "%s imports the test helper %s outside its tests", pkg, h)
		}
	}
}

// helper reports whether pkg is test support itself (statetest,
// reconciletest, kubetest, testutil, testutil/golint…), which may build
// on another.
func helper(pkg string) bool {
	base := path.Base(pkg)
	return strings.HasSuffix(base, "test") || base == "testutil" || strings.HasPrefix(pkg, golint.Module+"/internal/testutil/")
}
