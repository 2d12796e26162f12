package ui_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/ui"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/web"
)

func newUIServer(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := ui.New(web.Files())
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// get sends a request with the path exactly as given (no client-side
// cleaning), so traversal attempts reach the handler as written.
func get(t *testing.T, srv *httptest.Server, method, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL, nil)
	require.NoError(t, err)
	req.URL.Opaque = path // sent verbatim on the request line
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestHandler(t *testing.T) {
	t.Parallel()
	srv := newUIServer(t)
	const html, js, css, jsonType = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8", "application/json"
	cases := []struct {
		name, method, path string
		status             int
		contentType        string
		body               string // a substring of the body
	}{
		{"index", "GET", "/", 200, html, `<script type="module" src="/js/app.js"></script>`},
		{"index by name", "GET", "/index.html", 200, html, `id="app"`},
		{"SPA: a chat", "GET", "/chats/7b0e6f4e-9a57-4f7c-8a0c-1f6d0f1e2a3b", 200, html, `id="app"`},
		{"SPA: login", "GET", "/login", 200, html, `id="app"`},
		{"SPA: query string", "GET", "/login?next=/", 200, html, `id="app"`},
		{"module", "GET", "/js/app.js", 200, js, "import "},
		{"stylesheet", "GET", "/css/app.css", 200, css, ":root"},
		{"icon", "GET", "/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"HEAD", "HEAD", "/", 200, html, ""},
		{"missing module", "GET", "/js/nope.js", 404, "text/plain; charset=utf-8", "not found"},
		{"missing file", "GET", "/robots.txt", 404, "text/plain; charset=utf-8", "not found"},
		{"missing asset folder file", "GET", "/css/x", 404, "text/plain; charset=utf-8", "not found"},
		{"API path", "GET", "/api/v3/chats", 404, jsonType, `"code":"NOT_FOUND"`},
		{"API root", "GET", "/api", 404, jsonType, `"code":"NOT_FOUND"`},
		{"API POST", "POST", "/api/v2/nope", 404, jsonType, `"code":"NOT_FOUND"`},
		{"POST", "POST", "/", 405, "text/plain; charset=utf-8", "method not allowed"},
		{"traversal", "GET", "/../../go.mod", 404, "text/plain; charset=utf-8", "not found"},
		{"encoded traversal", "GET", "/js/..%2f..%2f..%2fgo.mod", 404, "text/plain; charset=utf-8", "not found"},
		{"dot-dot to the embed root", "GET", "/../web.go", 404, "text/plain; charset=utf-8", "not found"},
		{"the embed folder is not served", "GET", "/static/index.html", 404, "text/plain; charset=utf-8", "not found"},
		{"traversal without extension", "GET", "/../../etc/passwd", 200, html, `id="app"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, srv, tc.method, tc.path, nil)
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Equal(t, tc.contentType, resp.Header.Get("Content-Type"))
			require.Contains(t, body, tc.body)
			require.NotContains(t, body, "root:", "no file outside the UI")
			if !strings.HasPrefix(tc.path, "/api") {
				require.Equal(t, ui.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
			if tc.status == 200 {
				require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
				require.NotEmpty(t, resp.Header.Get("ETag"))
				require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	t.Parallel()
	srv := newUIServer(t)
	resp, _ := get(t, srv, "GET", "/js/app.js", nil)
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	resp, body := get(t, srv, "GET", "/js/app.js", http.Header{"If-None-Match": {etag}})
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	require.Empty(t, body)
	resp, _ = get(t, srv, "GET", "/js/app.js", http.Header{"If-None-Match": {`"stale"`}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestNewNeedsIndex(t *testing.T) {
	t.Parallel()
	_, err := ui.New(fstest.MapFS{"js/app.js": {Data: []byte("x")}})
	require.ErrorContains(t, err, "index.html")
}

// TestFilesKeepTheCSP checks the UI's sources for what the CSP would block
// or what would open a hole: inline scripts, inline styles and handlers in
// HTML, eval, and HTML written anywhere but the renderer's one entry point.
func TestFilesKeepTheCSP(t *testing.T) {
	t.Parallel()
	files := web.Files()
	var js []string
	require.NoError(t, fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(files, name)
		require.NoError(t, err)
		src := string(data)
		switch {
		case strings.HasSuffix(name, ".html"):
			for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(src, -1) {
				require.Contains(t, tag, "src=", "%s: inline script", name)
			}
			require.NotRegexp(t, `\sstyle=|\son[a-z]+=`, src, "%s: inline style or handler", name)
		case strings.HasSuffix(name, ".js"):
			js = append(js, name)
			require.NotRegexp(t, `\beval\(|new Function\(|document\.write`, src, "%s", name)
			if name != "js/dom.js" {
				require.NotContains(t, src, ".innerHTML", "%s: write HTML through dom.setHTML only", name)
			}
			require.NotRegexp(t, `setAttribute\('style'|insertAdjacentHTML|outerHTML\s*=`, src, "%s", name)
		}
		return nil
	}))
	require.NotEmpty(t, js)
}

// TestMountedInApp: the app serves the UI at / and keeps every API route,
// including the API's own JSON 404, ahead of the SPA fallback.
func TestMountedInApp(t *testing.T) {
	t.Parallel()
	a, err := app.NewWithStore(context.Background(), app.Config{BootstrapToken: "ui-mount-token", NoWorker: true}, dbtest.NewSQLite(t), io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)

	resp, body := get(t, srv, "GET", "/", nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, body, `id="app"`)
	resp, body = get(t, srv, "GET", "/chats/7b0e6f4e-9a57-4f7c-8a0c-1f6d0f1e2a3b", nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, body, `id="app"`)
	resp, body = get(t, srv, "GET", "/api/v2/no-such-route", nil)
	require.Equal(t, 404, resp.StatusCode)
	require.Contains(t, body, `"NOT_FOUND"`)
	resp, _ = get(t, srv, "GET", "/api/v2/users/me", nil)
	require.Equal(t, 401, resp.StatusCode)
	resp, body = get(t, srv, "GET", "/healthz", nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, body, `"ok"`)
}
