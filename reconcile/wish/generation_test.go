package wish_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyWishBumpsAGeneration is a lint: outside this package and the
// stores (which keep the generation they are given), no code but tests
// and the stores' contract suite may raise a spore's generation —
// `x.Generation++`, `x.Generation += n` or `x.Generation + n` anywhere
// (an assignment, a composite literal).
// A path that changed a wish by hand would let a pass overwrite it
// (see the package doc).
func TestOnlyWishBumpsAGeneration(t *testing.T) {
	// storetest is the stores' contract suite: test code.
	found := walkSources(t, []string{"reconcile/wish/", "state/dirstore/", "state/pgstore/", "state/storetest/"}, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IncDecStmt:
			return isGeneration(n.X)
		case *ast.AssignStmt:
			if n.Tok == token.ADD_ASSIGN || n.Tok == token.SUB_ASSIGN {
				for _, l := range n.Lhs {
					if isGeneration(l) {
						return true
					}
				}
			}
		case *ast.BinaryExpr:
			return (n.Op == token.ADD || n.Op == token.SUB) && (isGeneration(n.X) || isGeneration(n.Y))
		}
		return false
	})
	require.Empty(t, found, "a generation is bumped only by package wish (reconcile/wish)")
}

// TestOnlyWishWritesAWish is the same lint for the writes themselves:
// outside the stores and their contract suite, PutWish is called only
// here. (A status has its own one writer, state.UpdateStatus, and its
// own lint: state's TestOnlyUpdateStatusWritesAStatus.)
func TestOnlyWishWritesAWish(t *testing.T) {
	found := walkSources(t, []string{"state/", "reconcile/wish/"}, func(n ast.Node) bool { return isCall(n, "PutWish") })
	require.Empty(t, found, "a wish is written only by package wish (reconcile/wish)")
}

// walkSources parses every non-test Go file of the module outside the
// allowed path prefixes and returns the positions of the nodes bad
// reports.
func walkSources(t *testing.T, allowed []string, bad func(ast.Node) bool) []string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root is two levels up")
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, a := range allowed {
			if strings.HasPrefix(rel, a) {
				return nil
			}
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if n != nil && bad(n) {
				found = append(found, fset.Position(n.Pos()).String()[len(root)+1:])
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the walk read the module's sources")
	return found
}

func isCall(n ast.Node, method string) bool {
	c, ok := n.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == method
}

func isGeneration(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Generation"
}
