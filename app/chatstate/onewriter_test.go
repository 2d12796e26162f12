package chatstate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chatStateNouns are the prefixes of the store.Tx methods that write chat,
// request, tool-journal or lease state: DESIGN.md's rule 1 gives them to
// app/chatstate alone.
var chatStateNouns = []string{"Chat", "Message", "Queue", "Heartbeat", "Invocation", "Journal", "Approval"}

// writerExempt are the packages that write store rows directly on purpose:
// chatd bench seeds its data set and times raw commits as the baseline a
// turn is compared with; neither is a chat that runs.
var writerExempt = map[string]bool{"app/bench": true}

// TestOnlyChatstateWritesChatState reads the repository's source: the
// chat-state write methods declared by store.Tx are called only from
// app/chatstate (and the stores that implement them). Everyone else reads
// through Reader or ReadStore, so a new direct write elsewhere fails here.
// The methods are taken from store.Tx itself (and the per-noun interfaces
// it embeds), so one added later is covered without touching this test.
func TestOnlyChatstateWritesChatState(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	writes := txWriteMethods(t, filepath.Join(root, "store"))
	require.NotEmpty(t, writes, "no chat-state write methods found in store.Tx")

	fset := token.NewFileSet()
	var offenders []string
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && rel != ".",
				rel == "app/chatstate", rel == "store", rel == "web", rel == "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		txs := storeTxNames(f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !writes[sel.Sel.Name] {
				return true
			}
			var recv string
			switch x := sel.X.(type) {
			case *ast.Ident:
				recv = x.Name
			case *ast.SelectorExpr:
				recv = x.Sel.Name
			}
			if txs[recv] && !writerExempt[filepath.ToSlash(filepath.Dir(rel))] {
				offenders = append(offenders, fset.Position(sel.Pos()).String()+": "+recv+"."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, checked, "no source files found")
	sort.Strings(offenders)
	require.Empty(t, offenders, "chat state is written only through app/chatstate (DESIGN.md rule 1)")
}

// storeTxNames returns the names a file declares with the type store.Tx
// (parameters, variables, struct fields): the receivers whose chat-state
// writes the test looks for. A method of the same name on another type
// (chatstate.Tx has JournalStart too) is not one.
func storeTxNames(f *ast.File) map[string]bool {
	isStoreTx := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "store" && sel.Sel.Name == "Tx"
	}
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if isStoreTx(n.Type) {
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
		case *ast.ValueSpec:
			if n.Type != nil && isStoreTx(n.Type) {
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// txWriteMethods returns the names of the methods of store.Tx, with those
// of the interfaces it embeds, that Reader does not have (the writes) and
// that start with a chat-state noun. It reads every non-test file of the
// store package in dir, where each noun declares its interfaces.
func txWriteMethods(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ifaces := map[string]*ast.InterfaceType{}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if spec, ok := n.(*ast.TypeSpec); ok {
				if iface, ok := spec.Type.(*ast.InterfaceType); ok {
					ifaces[spec.Name.Name] = iface
				}
			}
			return true
		})
	}
	var methods func(name string) map[string]bool
	methods = func(name string) map[string]bool {
		iface, ok := ifaces[name]
		require.True(t, ok, "interface store.%s not found", name)
		out := map[string]bool{}
		for _, m := range iface.Methods.List {
			if len(m.Names) == 0 { // an embedded interface
				id, ok := m.Type.(*ast.Ident)
				require.True(t, ok, "store.%s embeds a non-local interface", name)
				for n := range methods(id.Name) {
					out[n] = true
				}
			}
			for _, id := range m.Names {
				out[id.Name] = true
			}
		}
		return out
	}
	reads := methods("Reader")
	out := map[string]bool{}
	for name := range methods("Tx") {
		if reads[name] {
			continue
		}
		for _, noun := range chatStateNouns {
			if strings.HasPrefix(name, noun) {
				out[name] = true
			}
		}
	}
	return out
}
