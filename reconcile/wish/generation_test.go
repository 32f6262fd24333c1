package wish_test

import (
	"go/ast"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestOnlyWishBumpsAGeneration is a lint: outside this package and the
// stores (which keep the generation they are given), no code but tests
// and the stores' contract suite may raise a spore's generation —
// `x.Generation++`, `x.Generation += n` or `x.Generation + n` anywhere
// (an assignment, a composite literal).
// A path that changed a wish by hand would let a pass overwrite it
// (see the package doc).
func TestOnlyWishBumpsAGeneration(t *testing.T) {
	found := golint.Find(t, golint.Exempt{
		"reconcile/wish/":  "the rule's home",
		"state/dirstore/":  "a store keeps the generation it is given",
		"state/pgstore/":   "a store keeps the generation it is given",
		"state/storetest/": "the stores' contract suite: test code",
	}, func(_ *golint.File, n ast.Node) bool {
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
	found := golint.Find(t, golint.Exempt{
		"state/":          "the stores implement PutWish, and their contract suite tests it",
		"reconcile/wish/": "the rule's home",
	}, func(_ *golint.File, n ast.Node) bool { return golint.IsCall(n, "PutWish") })
	require.Empty(t, found, "a wish is written only by package wish (reconcile/wish)")
}

func isGeneration(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Generation"
}
