package e2e_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
)

// openAPIDoc fetches the served document without credentials.
func openAPIDoc(t *testing.T) (*apptest.Harness, map[string]any) {
	t.Helper()
	h := apptest.Start(t, apptest.Options{NoStart: true})
	resp, err := http.Get(h.URL + "/api/v2/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	return h, doc
}

// TestOpenAPIMatchesRoutes: the document's paths and methods are exactly
// the /api/v2 routes registered on the mux, WebSockets included.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	h, doc := openAPIDoc(t)

	var documented []string
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" /api/v2"+path)
		}
	}
	var registered []string
	for _, p := range h.Routes {
		method, path, ok := strings.Cut(p, " ")
		if !ok || !strings.HasPrefix(path, "/api/v2/") {
			continue // the catch-alls and the routes outside the API
		}
		registered = append(registered, method+" "+path)
	}
	slices.Sort(documented)
	slices.Sort(registered)
	require.NotEmpty(t, registered)
	require.Equal(t, registered, documented)
}

// notWire are the exported SDK structs that never cross the wire as a body
// (client options and helpers).
var notWire = map[string]bool{
	"Client": true, "Error": true, "ListChatsOptions": true, "MessagesOptions": true,
	"LookupOptions": true, "RequestResult": true, "RetryPolicy": true, "RequestBinding": true, "ExportOptions": true,
}

// inline are the SDK structs with their own JSON encoding, described inline
// (app/api's customSchemas).
var inline = map[string]bool{"MCPServerSelection": true, "ProjectSelection": true}

// TestOpenAPIMatchesSDKTypes: every wire struct of app/sdk is a component
// schema whose properties are its JSON fields, read here from the source
// (not by the generator's reflection), so a new type or field shows.
func TestOpenAPIMatchesSDKTypes(t *testing.T) {
	t.Parallel()
	_, doc := openAPIDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)

	structs := sdkStructs(t)
	var missing []string
	for name := range structs {
		if _, ok := schemas[name]; !ok && !notWire[name] && !inline[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "sdk structs not in the OpenAPI document: add their routes to app/api/openapi.go operations, or list them in notWire")
	for name, st := range structs {
		if _, ok := schemas[name]; !ok {
			continue
		}
		require.False(t, notWire[name] || inline[name], "%s is listed as not a component", name)
		var props []string
		for p := range schemas[name].(map[string]any)["properties"].(map[string]any) {
			props = append(props, p)
		}
		slices.Sort(props)
		fields := jsonNames(structs, st)
		slices.Sort(fields)
		require.Equal(t, fields, props, "sdk.%s", name)
	}
	for name := range schemas {
		_, ok := structs[name]
		require.True(t, ok, "component %s is not an sdk struct", name)
	}
}

// sdkStructs parses app/sdk's non-test files for their exported structs.
func sdkStructs(t *testing.T) map[string]*ast.StructType {
	t.Helper()
	files, err := filepath.Glob("../app/sdk/*.go")
	require.NoError(t, err)
	out := map[string]*ast.StructType{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				out[ts.Name.Name] = st
			}
			return false
		})
	}
	require.NotEmpty(t, out)
	return out
}

// jsonNames are st's JSON field names as its tags spell them, embedded
// sdk structs promoted.
func jsonNames(structs map[string]*ast.StructType, st *ast.StructType) []string {
	var out []string
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
		}
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if len(f.Names) == 0 { // embedded
			if id, ok := f.Type.(*ast.Ident); ok && name == "" {
				out = append(out, jsonNames(structs, structs[id.Name])...)
				continue
			}
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			if name == "" {
				out = append(out, n.Name)
			} else {
				out = append(out, name)
			}
		}
	}
	return out
}
