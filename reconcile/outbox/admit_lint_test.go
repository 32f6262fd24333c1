package outbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdmittedOnce: a message is admitted, and its target's budget
// judged, by one function each, in admit.go, called from one place
// (record), which every sender goes through: a send never asks twice
// (issue 36: SendOnce and Send each asked mayWake once).
func TestAdmittedOnce(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	defined := map[string]string{}
	calls := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				defined[fn.Name.Name] = name
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok {
					calls[id.Name] = append(calls[id.Name], fset.Position(c.Pos()).String())
				}
			}
			return true
		})
	}
	for _, fn := range []string{"admit", "OverBudgetNow"} {
		require.Equal(t, "admit.go", defined[fn], "%s is defined in admit.go", fn)
		require.Len(t, calls[fn], 1, "%s is called from one place in the package: %v", fn, calls[fn])
		require.Contains(t, calls[fn][0], "record.go", "%s is called by record", fn)
	}
}
