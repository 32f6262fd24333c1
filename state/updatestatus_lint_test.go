package state_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyUpdateStatusWritesAStatus is a lint: no code calls
// Tx.PutStatus but state.UpdateStatus, so every status write reads the
// record fresh, is made at its wish's generation and is skipped when it
// changes nothing. Exempt, each for its reason:
//
//   - state/updatestatus.go: the one writer itself;
//   - state/storetest/: the stores' contract suite, which tests PutStatus
//     as the backends implement it (refusals included, which
//     UpdateStatus never makes);
//   - tests (_test.go): they set up records as they need them.
//
// The backends (state/dirstore, state/pgstore) are not exempt: they
// implement PutStatus, and their own status write (repair clearing a
// damage mark) goes through UpdateStatus like any other.
func TestOnlyUpdateStatusWritesAStatus(t *testing.T) {
	found := callsOutside(t, "PutStatus", []string{"state/updatestatus.go", "state/storetest/"})
	require.Empty(t, found, "a status is written only by state.UpdateStatus (state/updatestatus.go)")
}

// callsOutside parses every non-test Go file of the module outside the
// exempt path prefixes and returns the positions of its calls of a
// method or function named name.
func callsOutside(t *testing.T, name string, exempt []string) []string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root is one level up")
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, e := range exempt {
			if strings.HasPrefix(rel, e) {
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
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			called := ""
			switch fn := c.Fun.(type) {
			case *ast.SelectorExpr:
				called = fn.Sel.Name
			case *ast.Ident:
				called = fn.Name
			}
			if called == name {
				found = append(found, rel+":"+strconv.Itoa(fset.Position(c.Pos()).Line))
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the walk read the module's sources")
	return found
}
