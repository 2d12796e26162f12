package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// concreteStores are the store packages only OpenStore may name.
var concreteStores = map[string]bool{
	"github.com/chatd/chatd/store/postgres": true,
	"github.com/chatd/chatd/store/sqlite":   true,
}

// TestOnlyOpenStoreNamesAConcreteStore reads the app package's source: a
// concrete store package may be used only inside OpenStore, which picks one
// by DSN. Everything else asks the store for optional capabilities, so a new
// use of *postgres.Store elsewhere fails here.
func TestOnlyOpenStoreNamesAConcreteStore(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		checked++
		named := map[string]bool{} // local names of the concrete store packages
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			if !concreteStores[path] {
				continue
			}
			local := filepath.Base(path)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			named[local] = true
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "OpenStore" {
				continue
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && named[id.Name] {
					t.Errorf("%s: %s.%s names a concrete store outside OpenStore; declare a small interface for what the app needs instead",
						fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	require.NotZero(t, checked, "no source files found")
}
