package golint

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Imports returns the import paths that the non-test files of pkg (a
// path relative to the module) import, standard library included.
func Imports(t testing.TB, pkg string) []string {
	t.Helper()
	return goList(t, "-f", `{{join .Imports "\n"}}`, Module+"/"+pkg)
}

// Deps returns the import paths of every package pkg (a path relative to
// the module) depends on, itself included, as `go list -deps` does.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	deps := goList(t, "-deps", Module+"/"+pkg)
	require.Contains(t, deps, Module+"/"+pkg, "go list -deps lists the package itself")
	return deps
}

// Packages returns every package of the module with what its non-test
// files import.
func Packages(t testing.TB) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	for _, line := range goListLines(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, Module+"/...") {
		f := strings.Fields(line)
		pkgs[f[0]] = f[1:]
	}
	require.Greater(t, len(pkgs), 10, "go list lists the module's packages")
	return pkgs
}

func goList(t testing.TB, args ...string) []string {
	t.Helper()
	var out []string
	for _, line := range goListLines(t, args...) {
		out = append(out, strings.Fields(line)...)
	}
	return out
}

func goListLines(t testing.TB, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first on PATH
	require.NoError(t, err, "the go command lists the packages' imports")
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).CombinedOutput()
	require.NoError(t, err, "go list %s: %s", strings.Join(args, " "), out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
