package outbox

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestAdmittedOnce: a message is admitted, and its target's budget
// judged, by one function each, in admit.go, called from one place
// (record), which every sender goes through: a send never asks twice
// (issue 36: SendOnce and Send each asked mayWake once).
func TestAdmittedOnce(t *testing.T) {
	const dir = "reconcile/outbox/"
	defined := map[string]string{}
	calls := map[string][]string{}
	for _, f := range golint.Sources(t, dir, nil) {
		for _, d := range f.AST.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				defined[fn.Name.Name] = strings.TrimPrefix(f.Rel, dir)
			}
		}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok {
					calls[id.Name] = append(calls[id.Name], f.Pos(c))
				}
			}
			return true
		})
	}
	for _, fn := range []string{"admit", "OverBudgetNow"} {
		require.Equal(t, "admit.go", defined[fn], "%s is defined in admit.go", fn)
		require.Len(t, calls[fn], 1, "%s is called from one place in the package: %v", fn, calls[fn])
		require.Contains(t, calls[fn][0], dir+"record.go:", "%s is called by record", fn)
	}
}
