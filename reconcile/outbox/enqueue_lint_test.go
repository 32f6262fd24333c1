package outbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryMessageIsRecordedHere: an outbox entry is queued (Tx.Enqueue)
// by record alone, so a prompt from the CLI, the page, serve's routes, a
// loop or a summons is admitted, framed, judged and recorded the same
// way. Only the stores, which implement Enqueue (state/...), and tests
// call it elsewhere.
func TestEveryMessageIsRecordedHere(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	fset := token.NewFileSet()
	var callers []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "state" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Enqueue" {
					callers = append(callers, filepath.ToSlash(rel))
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"reconcile/outbox/record.go"}, callers, "Tx.Enqueue is called by record alone")
}
