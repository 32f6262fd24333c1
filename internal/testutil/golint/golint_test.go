package golint_test

import (
	"go/ast"
	"go/parser"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

func TestIsCall(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"PutStatus(x)", true},
		{"tx.PutStatus(ctx, s)", true},
		{"a.b.PutStatus()", true},
		{"PutStatusNow(x)", false},
		{"tx.PutStatus", false}, // a method value, not a call
		{"f(PutStatus)", false},
	} {
		e, err := parser.ParseExpr(c.src)
		require.NoError(t, err)
		require.Equal(t, c.want, golint.IsCall(e, "PutStatus"), c.src)
	}
}

// TestFindNamesFileAndLine: a finding says where, from the module root,
// and the walk leaves out tests and the exempt paths.
func TestFindNamesFileAndLine(t *testing.T) {
	found := golint.Find(t, golint.Exempt{"state/": "its own"}, func(f *golint.File, n ast.Node) bool {
		d, ok := n.(*ast.FuncDecl)
		return ok && d.Name.Name == "Find" && f.AST.Name.Name == "golint"
	})
	require.Len(t, found, 1)
	require.Regexp(t, `^internal/testutil/golint/walk\.go:\d+$`, found[0])
	for _, f := range golint.Sources(t, "", golint.Exempt{"state/": "its own"}) {
		require.False(t, strings.HasPrefix(f.Rel, "state/") || strings.HasSuffix(f.Rel, "_test.go"), f.Rel)
	}
}

func TestDepsListThePackageAndImportsItsImports(t *testing.T) {
	require.Contains(t, golint.Deps(t, "internal/testutil/golint"), "github.com/stretchr/testify/require")
	require.Contains(t, golint.Imports(t, "internal/testutil/golint"), "go/parser")
}
