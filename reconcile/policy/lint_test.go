package policy_test

import (
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

const module = golint.Module

// TestPolicyIsPure is a lint: policy's rules are functions of what they
// are given. Its files import only state and the standard library's
// value packages, never call the clock (now is a parameter), and nothing
// of the pass or above it reaches policy through its imports.
func TestPolicyIsPure(t *testing.T) {
	allowed := []string{module + "/state", "cmp", "errors", "fmt", "maps", "math", "slices", "sort", "strconv", "strings", "time", "unicode/utf8"}
	clock := []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}
	var found []string
	files := golint.Sources(t, "reconcile/policy", nil)
	for _, f := range files {
		for _, imp := range f.AST.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, p) {
				found = append(found, f.Pos(imp)+": imports "+p)
			}
		}
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && isPkg(sel.X, "time") && slices.Contains(clock, sel.Sel.Name) {
				found = append(found, f.Pos(n)+": reads the clock (time."+sel.Sel.Name+")")
			}
			return true
		})
	}
	require.Greater(t, len(files), 5, "the lint read policy's files")
	require.Empty(t, found, "policy is pure: state and value packages only, no clock")

	deps := golint.Deps(t, "reconcile/policy")
	// kube/podgrammar is below state (the store checks a pod option's
	// grammar on every write) and imports nothing of the module.
	below := map[string]bool{module + "/reconcile/policy": true, module + "/kube/podgrammar": true}
	for _, d := range deps {
		if below[d] {
			continue
		}
		for _, above := range []string{"/reconcile", "/mycelia", "/cmd/", "/kube", "/local", "/bridge"} {
			if strings.HasPrefix(d, module+above) {
				t.Errorf("policy depends on %s: nothing of the pass or above it may reach it", d)
			}
		}
	}
}

// archExempt are the files that may compare a rank with state.RankArch:
// the places that only spell the rank grammar, and those whose words or
// decisions are per rank by nature. Everyone else asks policy (AlwaysOn,
// AlwaysOnRank, ReadsCluster, Above, IsArch).
var archExempt = golint.Exempt{
	"reconcile/policy/":   "the rule's home",
	"state/spore.go":      "the rank grammar: parsing a rank, its level",
	"mycelia/routes.go":   "the rank lists of the route rows (who may call what)",
	"mycelia/reach.go":    "reach: the scope each rank sees is mycelia's decision (one rank up is policy's Above)",
	"mycelia/identity.go": "the words a spore's agent is told of its rank, one case per rank",
	"mycelia/text.go":     "a message's mark, one case per rank",
	"cmd/cli/complete.go": "the rank names completion offers",
}

// TestArchRuleHasOneHome is a lint: "the [arch] is always on and never
// budget-limited" was checked in 13 places; now nothing outside
// archExempt compares a rank with state.RankArch (==, != or a switch
// case), so a new check asks policy.
func TestArchRuleHasOneHome(t *testing.T) {
	found := golint.Find(t, archExempt, func(f *golint.File, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			return (n.Op == token.EQL || n.Op == token.NEQ) && (namesArch(f, n.X) || namesArch(f, n.Y))
		case *ast.CaseClause:
			return slices.ContainsFunc(n.List, func(e ast.Expr) bool { return namesArch(f, e) })
		}
		return false
	})
	require.Empty(t, found, "the [arch]'s standing is policy's (AlwaysOn, AlwaysOnRank, ReadsCluster, IsArch): ask it, or add the file to archExempt with a reason")
}

// budgetExempt may judge a spend against a budget outside policy.
var budgetExempt = golint.Exempt{
	"reconcile/policy/": "the judgement's home",
}

// TestBudgetJudgementHasOneHome is a lint: whether a spend reached a
// budget was judged in the pass and again for serve and the page; now
// nothing outside policy calls a Reaches or compares a budget's limit
// (TokensPerDay, CostPerDayMicros) with anything but a constant (as the
// validation's "0 or more" does, or a manifest's "set or not").
func TestBudgetJudgementHasOneHome(t *testing.T) {
	found := golint.Find(t, budgetExempt, func(_ *golint.File, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			// s.Reaches(b), state.Spend's; policy.Reaches is the rule
			// itself, mycelia.Reaches is reach, not a budget.
			fn, ok := n.Fun.(*ast.SelectorExpr)
			return ok && fn.Sel.Name == "Reaches" && !isPkg(fn.X, "policy") && !isPkg(fn.X, "mycelia")
		case *ast.BinaryExpr:
			switch n.Op {
			case token.LSS, token.LEQ, token.GTR, token.GEQ, token.EQL, token.NEQ:
				return isLimit(n.X) && !isConst(n.Y) || isLimit(n.Y) && !isConst(n.X)
			}
		}
		return false
	})
	require.Empty(t, found, "whether a spend reached a budget is policy's (Reaches, Over): ask it, or add the file to budgetExempt with a reason")
}

// namesArch reports whether e mentions the [arch]'s rank: state.RankArch,
// or RankArch inside package state.
func namesArch(f *golint.File, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			found = found || isPkg(n.X, "state") && n.Sel.Name == "RankArch"
			return false
		case *ast.Ident:
			found = found || f.AST.Name.Name == "state" && n.Name == "RankArch"
		}
		return !found
	})
	return found
}

// isLimit reports whether e reads a budget's limit.
func isLimit(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "TokensPerDay" || sel.Sel.Name == "CostPerDayMicros")
}

// isConst reports whether e is a number written out (0, -1) or nil (an
// optional limit in a manifest).
func isConst(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return e.Name == "nil"
	case *ast.UnaryExpr:
		return isConst(e.X)
	}
	return false
}

func isPkg(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
