package sdk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sdkCodes reads the SDK's error code constants (Code* = "...") from its
// source.
func sdkCodes(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	codes := map[string]string{}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") {
				return true
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				codes[vs.Names[0].Name] = v
			}
			return true
		})
	}
	require.NotEmpty(t, codes)
	return codes
}

// The error codes of the contract are exactly the ones chatd sends: every
// code of API.md's error table is an SDK constant, and every SDK constant
// is documented there and produced by the server (named outside app/sdk
// and outside tests). A code the spec has but chatd never sends (the
// spec's LOOP_ERROR) is not in the contract.
func TestErrorCodesAreTheContract(t *testing.T) {
	codes := sdkCodes(t)
	raw, err := os.ReadFile("../../docs/API.md")
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "| status | code | when |")
	require.Positive(t, start, "API.md has an error table")
	table := doc[start:]
	table = table[:strings.Index(table, "\n\n")]
	documented := map[string]bool{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cols := strings.Split(row, "|")
		require.Greater(t, len(cols), 3, "row %q", row)
		for _, m := range regexp.MustCompile("`([A-Z][A-Z_]+)`").FindAllStringSubmatch(cols[2], -1) {
			documented[m[1]] = true
		}
	}
	values := map[string]bool{}
	for _, v := range codes {
		values[v] = true
	}
	for code := range documented {
		if code == "TOO_MANY_CONNECTIONS" {
			continue // sent by the connection cap before any handler
		}
		require.True(t, values[code], "API.md documents %s, which the SDK does not name", code)
	}

	var src strings.Builder
	require.NoError(t, filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || path == filepath.Join("..", "..", "app", "sdk")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		src.Write(b)
		return err
	}))
	for name, v := range codes {
		require.True(t, documented[v], "%s (%s) is not in API.md's error table", name, v)
		require.Contains(t, src.String(), "sdk."+name, "%s (%s) is documented but chatd never sends it", name, v)
	}
}
