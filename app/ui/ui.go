// Package ui serves chatd's embedded web UI (package web): the static files
// with their content types, validators, caching rules and a strict
// Content-Security-Policy, and index.html for the UI's own routes (SPA
// fallback, e.g. /login, /chats/{id}). It never answers for /api/: an
// unknown API path gets the API's JSON 404, not a page.
//
// Every file is read into memory when the handler is built, and requests
// are answered from that table only, so no request path can reach outside
// the embedded tree. Text files are gzip-compressed once, then, and
// Brotli-compressed (level 5) on their first request that accepts br
// (too slow to do for every file at every start); both are
// kept, once per process for each content however many handlers are built
// (tests build many), and served to clients that accept them, br first.
//
// Versioned assets: every file is also served under /v/<version>/, where
// the version is a hash of the whole tree, and index.html names its
// stylesheet, script and icon by those URLs. Modules import each other by
// relative paths, so a whole UI version loads from one prefix, and those
// responses are cached for a year as immutable; a new binary with any
// changed file has a new version. index.html itself, the unversioned paths
// and a version other than the current one are served no-cache (revalidated
// with the ETag).
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andybalholm/brotli"
)

// ContentSecurityPolicy is sent with every UI response: only the UI's own
// scripts and styles run (no inline code), and it connects only to its own
// origin (HTTP and the chat stream's WebSocket).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self' ws: wss:; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// DiagramFrame is the page js/rich.js loads in a hidden iframe, sandboxed
// to scripts only, to draw Mermaid diagrams: Mermaid writes inline styles
// while it lays a diagram out, which ContentSecurityPolicy forbids, so this
// one page gets DiagramFramePolicy, which allows inline styles and nothing
// else more (its scripts are still only the UI's files; no connections).
// The sandbox gives the frame an opaque origin: no cookies, no storage, no
// access to the page that frames it.
const DiagramFrame = "diagram-frame.html"

// DiagramFramePolicy is DiagramFrame's Content-Security-Policy.
const DiagramFramePolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

// CacheControl makes browsers revalidate index.html and unversioned paths
// (cheap: ETag and 304), so a new binary's UI is picked up at once.
const CacheControl = "no-cache"

// ImmutableCacheControl is sent for files under the current version prefix:
// their content never changes under that URL.
const ImmutableCacheControl = "public, max-age=31536000, immutable"

// VersionPrefix is the path segment of versioned assets: /v/<version>/<file>.
const VersionPrefix = "v/"

// contentTypes fixes the types of the UI's file kinds, whatever the host's
// mime tables say; other extensions fall back to package mime.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".json":  "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".txt":   "text/plain; charset=utf-8",
	".woff2": "font/woff2",
}

// LargeFile is the size from which a file is compressed only when first
// asked for, in the background, at gzip's best speed, and never with
// Brotli: the vendored Mermaid (5 MB) takes a second at the best level, and
// more than ten under the race detector, in every process that builds a
// handler. Until its gzip form is ready, a large file is sent as it is.
const LargeFile = 1 << 20

type file struct {
	data        []byte
	etag        string
	contentType string
	gzip        []byte   // nil when compression does not pay (binary, tiny) or the file is large
	enc         *encoded // the compressed forms, shared by every handler of this content
}

// encoded is the compressed forms of one content. They are made once per
// process, whatever the number of handlers built (tests build one per app),
// and kept for the content's hash: Brotli at its best level takes seconds
// for the UI's files (far more under the race detector).
type encoded struct {
	gzipOnce sync.Once
	gzip     []byte
	gzipErr  error

	// A large file's gzip form, made in the background on first request.
	largeOnce sync.Once
	large     atomic.Pointer[[]byte]

	brOnce sync.Once
	br     []byte // nil when it does not pay
}

// brotliLevel: level 5 makes the whole UI about 10% larger than the best
// level (11) but twenty times faster (a quarter of a second for the tree,
// against five seconds, in the first page load after a start).
const brotliLevel = 5

// encodings is every content's encoded, by SHA-256.
var encodings sync.Map // [32]byte -> *encoded

// brotli returns the file's Brotli encoding, compressing it on first use,
// or nil when the file is not compressible or br is not smaller.
func (f *file) brotli() []byte {
	if f.gzip == nil {
		return nil
	}
	e := f.enc
	e.brOnce.Do(func() {
		var b bytes.Buffer
		w := brotli.NewWriterLevel(&b, brotliLevel)
		// Writes to a bytes.Buffer do not fail.
		_, _ = w.Write(f.data)
		_ = w.Close()
		if b.Len() < len(f.gzip) {
			e.br = b.Bytes()
		}
	})
	return e.br
}

// Handler serves the UI.
type Handler struct {
	files   map[string]*file // by path inside the tree, without a leading slash
	index   *file
	version string
}

// compressible: the text types, worth gzipping.
func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || contentType == "application/json" ||
		contentType == "image/svg+xml"
}

func newFile(name string, data []byte) (*file, error) {
	sum := sha256.Sum256(data)
	f := &file{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: contentType(name)}
	if !compressible(f.contentType) {
		return f, nil
	}
	v, _ := encodings.LoadOrStore(sum, &encoded{})
	f.enc = v.(*encoded)
	if len(data) >= LargeFile {
		return f, nil
	}
	f.enc.gzipOnce.Do(func() { f.enc.gzip, f.enc.gzipErr = gzipped(data) })
	if f.enc.gzipErr != nil {
		return nil, f.enc.gzipErr
	}
	f.gzip = f.enc.gzip
	return f, nil
}

// largeGzip returns a large file's gzip form when it is ready, else nil,
// starting its compression on the first call.
func (f *file) largeGzip() []byte {
	if f.enc == nil || len(f.data) < LargeFile {
		return nil
	}
	e := f.enc
	e.largeOnce.Do(func() { go e.compressLarge(f.data) })
	if z := e.large.Load(); z != nil {
		return *z
	}
	return nil
}

// compressLarge makes a large file's gzip form at gzip's best speed. It
// runs once per content and process, on its own goroutine (tests that
// check for leaks let it finish: app/ui/main_test.go).
func (e *encoded) compressLarge(data []byte) {
	if z, err := gzippedLevel(data, gzip.BestSpeed); err == nil && z != nil {
		e.large.Store(&z)
	}
}

// gzipped is data gzip-compressed, or nil when that is not smaller.
func gzipped(data []byte) ([]byte, error) {
	return gzippedLevel(data, gzip.BestCompression)
}

func gzippedLevel(data []byte, level int) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.Len() < len(data) {
		return b.Bytes(), nil
	}
	return nil, nil
}

// New reads every file of fsys (which must have index.html at its root)
// into a handler.
func New(fsys fs.FS) (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		h.files[name], err = newFile(name, data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read UI files: %w", err)
	}
	index := h.files["index.html"]
	if index == nil {
		return nil, fmt.Errorf("read UI files: no index.html")
	}
	h.version = treeVersion(h.files)
	// index.html names the current version's URLs: "/<file>" -> "/v/<version>/<file>".
	page := index.data
	for name := range h.files {
		if name != "index.html" {
			page = bytes.ReplaceAll(page, []byte(`"/`+name+`"`), []byte(`"/`+VersionPrefix+h.version+"/"+name+`"`))
		}
	}
	if h.index, err = newFile("index.html", page); err != nil {
		return nil, fmt.Errorf("read UI files: %w", err)
	}
	h.files["index.html"] = h.index
	return h, nil
}

// Version is the current version of the UI's files (the path segment after
// /v/).
func (h *Handler) Version() string { return h.version }

// treeVersion hashes every file's name and content.
func treeVersion(files map[string]*file) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	sum := sha256.New()
	for _, name := range names {
		fmt.Fprintf(sum, "%s\x00%s\x00", name, files[name].etag)
	}
	return hex.EncodeToString(sum.Sum(nil)[:8])
}

// accepts reads whether an Accept-Encoding header admits coding (by name
// or *) with a non-zero q. A coding named explicitly wins over *.
func accepts(header, coding string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != coding && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if name == coding {
			return q > 0
		}
		star = q > 0
	}
	return star
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// isAPI: paths the UI must never answer with a page.
func isAPI(p string) bool {
	return p == "/api" || strings.HasPrefix(p, "/api/")
}

// isAsset: a missing path that names a file (it has an extension, or lies
// in an asset folder) is a 404, not the SPA's index page.
func isAsset(name string) bool {
	return strings.Contains(path.Base(name), ".") ||
		strings.HasPrefix(name, "js/") || strings.HasPrefix(name, "css/")
}

// ServeHTTP serves a file, or index.html for the UI's routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isAPI(r.URL.Path) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"No such API route.","code":"NOT_FOUND"}` + "\n"))
		return
	}
	hd := w.Header()
	setSecurityHeaders(hd)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	cache, versioned := CacheControl, false
	if rest, ok := strings.CutPrefix(name, VersionPrefix); ok {
		versioned = true
		version, file, _ := strings.Cut(rest, "/")
		if version == h.version && file != "index.html" {
			cache = ImmutableCacheControl
		}
		// Another version's URL (a page loaded before an upgrade) gets
		// today's file, revalidated rather than cached as that version.
		name = file
	}
	f := h.files[name]
	if f == nil {
		if versioned || isAsset(name) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		name, f = "index.html", h.index
	}
	if f == h.index {
		cache = CacheControl
	}
	if name == DiagramFrame {
		hd.Set("Content-Security-Policy", DiagramFramePolicy)
		hd.Set("X-Frame-Options", "SAMEORIGIN")
	}
	hd.Set("Content-Type", f.contentType)
	hd.Set("Cache-Control", cache)
	data, etag := f.data, f.etag
	if f.enc != nil && len(f.data) >= LargeFile {
		hd.Add("Vary", "Accept-Encoding")
		if gz := f.largeGzip(); gz != nil && accepts(r.Header.Get("Accept-Encoding"), "gzip") {
			data, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	} else if f.gzip != nil {
		hd.Add("Vary", "Accept-Encoding")
		// Each encoding has its own validator: a cache must not answer a
		// 304 for one body with another.
		ae := r.Header.Get("Accept-Encoding")
		if br := f.brotli(); br != nil && accepts(ae, "br") {
			data, etag = br, strings.TrimSuffix(f.etag, `"`)+`-br"`
			hd.Set("Content-Encoding", "br")
		} else if accepts(ae, "gzip") {
			data, etag = f.gzip, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
