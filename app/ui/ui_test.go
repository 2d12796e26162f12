package ui_test

import (
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
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
		{"index", "GET", "/", 200, html, `<script type="module" src="/v/`},
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
			if tc.status == 200 && !strings.HasPrefix(tc.path, "/v/") {
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
		case strings.HasPrefix(name, "vendor/"):
			// Released libraries, unmodified (vendor/README.md): they run
			// under the same policy, which the browser tests check
			// (TestBrowserMathAndDiagrams: no violation, no console error).
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

// TestDiagramFramePolicy: the page Mermaid draws in gets its own policy
// (inline styles, nothing else more) and may be framed by the UI only; every
// other file keeps the UI's policy; vendored fonts have their type.
func TestDiagramFramePolicy(t *testing.T) {
	t.Parallel()
	srv := newUIServer(t)
	for _, p := range []string{"/" + ui.DiagramFrame, "/" + ui.VersionPrefix + "x/" + ui.DiagramFrame} {
		resp, body := get(t, srv, "GET", p, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		require.Contains(t, body, "vendor/mermaid/mermaid.min.js", p)
		require.Equal(t, ui.DiagramFramePolicy, resp.Header.Get("Content-Security-Policy"), p)
		require.Equal(t, "SAMEORIGIN", resp.Header.Get("X-Frame-Options"), p)
	}
	require.NotContains(t, ui.DiagramFramePolicy, "unsafe-eval")
	require.Contains(t, ui.DiagramFramePolicy, "script-src 'self';")
	for _, p := range []string{"/", "/js/rich.js", "/vendor/mermaid/mermaid.min.js", "/chats/x"} {
		resp, _ := get(t, srv, "GET", p, nil)
		require.Equal(t, ui.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), p)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), p)
	}
	resp, _ := get(t, srv, "GET", "/vendor/katex/fonts/KaTeX_Main-Regular.woff2", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "font/woff2", resp.Header.Get("Content-Type"))
	require.Empty(t, resp.Header.Get("Content-Encoding"), "woff2 is compressed already")
}

// TestMountedInApp: the app serves the UI at / and keeps every API route,
// including the API's own JSON 404, ahead of the SPA fallback.
func TestMountedInApp(t *testing.T) {
	t.Parallel()
	a, err := app.NewWithStore(context.Background(), config.Config{BootstrapToken: "ui-mount-token", NoWorker: true}, dbtest.NewSQLite(t), io.Discard)
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

// index.html names its assets under the current version, and those URLs
// are cached as immutable; index.html and unversioned or other-version URLs
// are revalidated.
func TestHandlerVersionedAssets(t *testing.T) {
	t.Parallel()
	h, err := ui.New(web.Files())
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	v := "/v/" + h.Version()
	require.Regexp(t, `^/v/[0-9a-f]{16}$`, v)

	_, page := get(t, srv, "GET", "/", nil)
	for _, ref := range []string{`src="` + v + `/js/app.js"`, `href="` + v + `/css/app.css"`, `href="` + v + `/favicon.svg"`} {
		require.Contains(t, page, ref)
	}
	cases := []struct {
		path, cache string
		status      int
	}{
		{"/", ui.CacheControl, 200},
		{"/chats/7b0e6f4e-9a57-4f7c-8a0c-1f6d0f1e2a3b", ui.CacheControl, 200},
		{v + "/js/app.js", ui.ImmutableCacheControl, 200},
		{v + "/js/markdown.js", ui.ImmutableCacheControl, 200}, // a relative import of app.js
		{v + "/css/app.css", ui.ImmutableCacheControl, 200},
		{v + "/index.html", ui.CacheControl, 200},
		{"/js/app.js", ui.CacheControl, 200},
		{"/v/0123456789abcdef/js/app.js", ui.CacheControl, 200},
		{v + "/js/nope.js", "", 404},
		{v + "/chats/x", "", 404},
		{v + "/", "", 404},
	}
	for _, tc := range cases {
		resp, body := get(t, srv, "GET", tc.path, nil)
		require.Equal(t, tc.status, resp.StatusCode, tc.path)
		if tc.status == 200 {
			require.Equal(t, tc.cache, resp.Header.Get("Cache-Control"), tc.path)
			require.NotEmpty(t, body, tc.path)
		}
	}
	// The same bytes as the unversioned file.
	_, a := get(t, srv, "GET", "/js/app.js", nil)
	_, b := get(t, srv, "GET", v+"/js/app.js", nil)
	require.Equal(t, a, b)
}

// Another tree has another version.
func TestHandlerVersionFollowsContent(t *testing.T) {
	t.Parallel()
	tree := func(js string) string {
		h, err := ui.New(fstest.MapFS{
			"index.html": {Data: []byte(`<script src="/js/app.js"></script>`)},
			"js/app.js":  {Data: []byte(js)},
		})
		require.NoError(t, err)
		return h.Version()
	}
	require.Equal(t, tree("a"), tree("a"))
	require.NotEqual(t, tree("a"), tree("b"))
}

// Text files are served Brotli- or gzip-compressed to clients that accept
// them (br first), each encoding with its own validator; others get the
// identity body.
func TestHandlerCompresses(t *testing.T) {
	t.Parallel()
	srv := newUIServer(t)
	_, plain := get(t, srv, "GET", "/js/app.js", http.Header{"Accept-Encoding": {"identity"}})
	decode := map[string]func(string) (io.Reader, error){
		"":     func(b string) (io.Reader, error) { return strings.NewReader(b), nil },
		"gzip": func(b string) (io.Reader, error) { return gzip.NewReader(strings.NewReader(b)) },
		"br":   func(b string) (io.Reader, error) { return brotli.NewReader(strings.NewReader(b)), nil },
	}
	cases := []struct {
		accept   string
		encoding string
	}{
		{"gzip", "gzip"},
		{"gzip, deflate, br, zstd", "br"},
		{"br", "br"},
		{"BR;q=0.5", "br"},
		{"br;q=0, gzip", "gzip"},
		{"br;q=0, *", "gzip"},
		{"GZIP", "gzip"},
		{"*", "br"},
		{"gzip;q=0", ""},
		{"*;q=0", ""},
		{"identity", ""},
	}
	etags := map[string]string{}
	sizes := map[string]int{}
	for _, tc := range cases {
		resp, body := get(t, srv, "GET", "/js/app.js", http.Header{"Accept-Encoding": {tc.accept}})
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.accept)
		require.Equal(t, "Accept-Encoding", resp.Header.Get("Vary"), tc.accept)
		require.Equal(t, tc.encoding, resp.Header.Get("Content-Encoding"), tc.accept)
		r, err := decode[tc.encoding](body)
		require.NoError(t, err, tc.accept)
		decoded, err := io.ReadAll(r)
		require.NoError(t, err, tc.accept)
		require.Equal(t, plain, string(decoded), tc.accept)
		etags[tc.encoding], sizes[tc.encoding] = resp.Header.Get("ETag"), len(body)
	}
	require.Len(t, etags, 3)
	require.NotEqual(t, etags[""], etags["gzip"], "each encoding has its own ETag")
	require.NotEqual(t, etags["gzip"], etags["br"], "each encoding has its own ETag")
	require.Less(t, sizes["gzip"], sizes[""], "gzip is smaller")
	require.Less(t, sizes["br"], sizes["gzip"], "br is smaller still")

	// A 304 for each compressed ETag.
	for _, enc := range []string{"gzip", "br"} {
		resp, _ := get(t, srv, "GET", "/js/app.js", http.Header{"Accept-Encoding": {enc}, "If-None-Match": {etags[enc]}})
		require.Equal(t, http.StatusNotModified, resp.StatusCode, enc)
	}

	// Binary files are sent as they are.
	h, err := ui.New(fstest.MapFS{"index.html": {Data: []byte("x")}, "a.png": {Data: []byte(strings.Repeat("p", 4096))}})
	require.NoError(t, err)
	png := httptest.NewServer(h)
	t.Cleanup(png.Close)
	resp, _ := get(t, png, "GET", "/a.png", http.Header{"Accept-Encoding": {"gzip, br"}})
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.Empty(t, resp.Header.Get("Vary"))
}

// A large file (the vendored Mermaid) is not compressed when the handler
// is built: its first request starts a gzip in the background and gets the
// file as it is; once ready, gzip-accepting requests get the gzip form,
// with its own ETag.
func TestHandlerLargeFileGzipLater(t *testing.T) {
	t.Parallel()
	big := []byte(strings.Repeat("var x = 1;\n", ui.LargeFile/10))
	h, err := ui.New(fstest.MapFS{"index.html": {Data: []byte("x")}, "big.js": {Data: big}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gz := http.Header{"Accept-Encoding": {"gzip"}}
	resp, body := get(t, srv, "GET", "/big.js", gz)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "Accept-Encoding", resp.Header.Get("Vary"))
	if resp.Header.Get("Content-Encoding") == "" {
		require.Equal(t, string(big), body, "sent as it is until the gzip form is ready")
	}
	require.Eventually(t, func() bool {
		resp, _ := get(t, srv, "GET", "/big.js", gz)
		return resp.Header.Get("Content-Encoding") == "gzip"
	}, 30*time.Second, 20*time.Millisecond)
	resp, body = get(t, srv, "GET", "/big.js", gz)
	zr, err := gzip.NewReader(strings.NewReader(body))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, big, plain)
	require.Less(t, len(body), len(big)/10)
	idResp, _ := get(t, srv, "GET", "/big.js", http.Header{"Accept-Encoding": {"identity"}})
	require.Empty(t, idResp.Header.Get("Content-Encoding"))
	require.NotEqual(t, idResp.Header.Get("ETag"), resp.Header.Get("ETag"), "each encoding has its own ETag")
	resp, _ = get(t, srv, "GET", "/big.js", http.Header{"Accept-Encoding": {"gzip"}, "If-None-Match": {resp.Header.Get("ETag")}})
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
}
