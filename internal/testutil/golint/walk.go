package golint

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

// File is one parsed Go file of the module.
type File struct {
	Fset *token.FileSet
	AST  *ast.File
	Rel  string // its path from the module root, with slashes
}

// Pos is where n is, as a finding names it: "reconcile/pass.go:42".
func (f *File) Pos(n ast.Node) string {
	return f.Rel + ":" + strconv.Itoa(f.Fset.Position(n.Pos()).Line)
}

// Exempt maps a path prefix from the module root ("state/",
// "state/updatestatus.go") to the reason its files may break the rule.
type Exempt map[string]string

// Find parses every non-test Go file of the module outside exempt and
// returns the position of each node match holds for. A lint that finds
// nothing must still have read the module, so it fails when the walk
// read too little, and when an exempt path no longer exists (its reason
// would be stale).
func Find(t testing.TB, exempt Exempt, match func(f *File, n ast.Node) bool) []string {
	t.Helper()
	files := Sources(t, "", exempt)
	require.Greater(t, len(files), 100, "the walk read the module's sources")
	var found []string
	for _, f := range files {
		ast.Inspect(f.AST, func(n ast.Node) bool {
			if n != nil && match(f, n) {
				found = append(found, f.Pos(n))
			}
			return true
		})
	}
	return found
}

// Sources parses the non-test Go files under dir (a path from the module
// root, "" for all of it) outside exempt, hidden directories, testdata
// and node_modules left out.
func Sources(t testing.TB, dir string, exempt Exempt) []*File {
	t.Helper()
	root := Root(t)
	for p, why := range exempt {
		_, err := os.Stat(filepath.Join(root, p))
		require.NoError(t, err, "exempt path %s (%s) exists", p, why)
	}
	top := filepath.Join(root, filepath.FromSlash(dir))
	var files []*File
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != top && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || exempted(rel, exempt) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, &File{Fset: fset, AST: f, Rel: rel})
		return nil
	})
	require.NoError(t, err, "read the Go files under %s", top)
	return files
}

func exempted(rel string, exempt Exempt) bool {
	for p := range exempt {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// Root is the module's directory: the nearest one up from the test's
// that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		require.NotEqual(t, dir, up, "a go.mod above the test's directory")
		dir = up
	}
}

// IsCall reports whether n calls a function or method named name
// (f(…), x.f(…)).
func IsCall(n ast.Node, name string) bool {
	c, ok := n.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fn := c.Fun.(type) {
	case *ast.SelectorExpr:
		return fn.Sel.Name == name
	case *ast.Ident:
		return fn.Name == name
	}
	return false
}
