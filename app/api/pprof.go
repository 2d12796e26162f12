package api

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// pprofRoutes serves the Go runtime profiles under /debug/pprof/ to admins
// when Config.Pprof is on. Off, the path answers 404 like any unknown API
// path (rather than the UI's index page), so nothing tells it apart from a
// server without profiles.
func (s *Server) pprofRoutes() {
	if !s.cfg.Pprof {
		s.mux.Handle("/debug/pprof/", s.handle(func(w http.ResponseWriter, r *http.Request) error {
			return errNotFoundRoute
		}))
		return
	}
	s.mux.Handle("GET /debug/pprof/", s.handle(s.authed(func(w http.ResponseWriter, r *http.Request, c *caller) error {
		if !c.user.Admin {
			return errAdminOnly
		}
		switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
		case "cmdline":
			pprof.Cmdline(w, r)
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Index(w, r) // the index and the named profiles (heap, goroutine, ...)
		}
		return nil
	})))
}
