// Package ui serves chatd's embedded web UI (package web): the static files
// with their content types, validators, no-cache and a strict
// Content-Security-Policy, and index.html for the UI's own routes (SPA
// fallback, e.g. /login, /chats/{id}). It never answers for /api/: an
// unknown API path gets the API's JSON 404, not a page.
//
// Every file is read into memory when the handler is built, and requests
// are answered from that table only, so no request path can reach outside
// the embedded tree.
package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// ContentSecurityPolicy is sent with every UI response: only the UI's own
// scripts and styles run (no inline code), and it connects only to its own
// origin (HTTP and the chat stream's WebSocket).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self' ws: wss:; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CacheControl makes browsers revalidate every file (cheap: ETag and 304),
// so a new binary's UI is picked up at once; the files are not versioned.
const CacheControl = "no-cache"

// contentTypes fixes the types of the UI's file kinds, whatever the host's
// mime tables say; other extensions fall back to package mime.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
}

type file struct {
	data        []byte
	etag        string
	contentType string
}

// Handler serves the UI.
type Handler struct {
	files map[string]*file // by path inside the tree, without a leading slash
	index *file
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
		sum := sha256.Sum256(data)
		h.files[name] = &file{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, contentType: contentType(name)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read UI files: %w", err)
	}
	if h.index = h.files["index.html"]; h.index == nil {
		return nil, fmt.Errorf("read UI files: no index.html")
	}
	return h, nil
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
	f := h.files[name]
	if f == nil {
		if isAsset(name) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		name, f = "index.html", h.index
	}
	hd.Set("Content-Type", f.contentType)
	hd.Set("Cache-Control", CacheControl)
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
