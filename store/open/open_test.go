package open_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// concreteStores are the store packages only this package opens.
var concreteStores = map[string]bool{
	"github.com/chatd/chatd/store/postgres": true,
	"github.com/chatd/chatd/store/sqlite":   true,
}

// opening are the concrete stores' names that open or hold a store.
var opening = map[string]bool{"Open": true, "Store": true, "Options": true}

// TestOnlyOpenOpensAConcreteStore reads the non-test source of app/ and
// cmd/ (test kits aside): no file there opens or holds a concrete store (sqlite.Open,
// *postgres.Store); they go through this package and ask the store for
// optional capabilities by interface, so a new use of *postgres.Store
// there fails here.
func TestOnlyOpenOpensAConcreteStore(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{"../../app", "../../cmd"} {
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir // a test kit (apptest) opens isolated stores as dbtest does
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			checked++
			named := map[string]bool{} // local names of the concrete store packages
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if !concreteStores[p] {
					continue
				}
				local := filepath.Base(p)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				named[local] = true
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && named[id.Name] && opening[sel.Sel.Name] {
					t.Errorf("%s: %s.%s opens or holds a concrete store; use store/open and ask the store for capabilities by interface",
						fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
				}
				return true
			})
			return nil
		}))
	}
	require.Greater(t, checked, 50, "the source of app/ and cmd/ was not found")
}
