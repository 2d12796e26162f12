// Package api serves chatd's HTTP API (API.md): chat routes under /api/v2
// and /api/experimental, auth, health and metrics. Handlers translate
// requests into chatstate transitions and return their errors; one wrapper
// (Server.handle) answers them through the one error mapping (errors.go)
// and logs the unexpected ones with Deps.Log.
//
// Files by resource: chats.go (create, list, get, update, delete),
// messages.go (list, send, edit), queue.go (queued messages), actions.go
// (interrupt, tool results, compaction, clear, reconcile), models.go,
// requests.go (durable request claims and lookup), auth.go (users, login).
package api

import (
	"log/slog"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	DefaultMaxBodyBytes   = 1 << 20  // 1 MiB
	DefaultMaxTextBytes   = 64 << 10 // 64 KiB of text per message
	DefaultListLimit      = 50
	MaxListLimit          = 500
	DefaultMessagesLimit  = 100
	DefaultFallbackLength = 60
)

// Config holds the API's limits. Zero values take the Defaults.
type Config struct {
	// MaxBodyBytes caps every request body (413 TOO_LARGE beyond).
	MaxBodyBytes int64
	// MaxTextBytes caps the text of one message (413 TOO_LARGE beyond).
	MaxTextBytes int
	// SecureCookies marks the session cookie Secure (behind TLS).
	SecureCookies bool
}

// Models is the configured model list; the API validates model ids with it.
type Models interface {
	List() []sdk.ChatModel
}

// TitleGenerator is told about chats that got a fallback title so it can
// generate a better one in the background. It must not block.
type TitleGenerator interface {
	GenerateTitle(chatID uuid.UUID)
}

// Deps are the API's collaborators.
type Deps struct {
	Machine *chatstate.Machine
	Store   store.Store
	Models  Models
	Titles  TitleGenerator // optional
	// Log receives unexpected errors (answered 500) and failed health
	// checks; slog.Default() when nil.
	Log     *slog.Logger
	Metrics *Metrics // optional
	// Clock is the time source; clock.Real when nil.
	Clock clock.Clock
	// Tokens authenticates and mints sessions; auth.New with the default
	// session TTL when nil.
	Tokens *auth.Tokens
}

// Server is the HTTP API.
type Server struct {
	cfg  Config
	deps Deps
	mux  *http.ServeMux
}

// New builds the API handler.
func New(cfg Config, deps Deps) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxTextBytes == 0 {
		cfg.MaxTextBytes = DefaultMaxTextBytes
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Tokens == nil {
		deps.Tokens = auth.New(deps.Store, deps.Clock, deps.Log, auth.Config{})
	}
	s := &Server{cfg: cfg, deps: deps, mux: http.NewServeMux()}
	s.routes()
	return s
}

// Handle registers an extra route (the app adds the UI and streams).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

func (s *Server) routes() {
	chat := func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error) {
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			s.mux.Handle(method+" "+prefix+path, s.instrument(method+" /api/*"+path, s.handle(s.authed(h))))
		}
	}
	chat("POST", "/chats", s.createChat)
	chat("GET", "/chats", s.listChats)
	chat("GET", "/chats/models", s.listModels)
	chat("GET", "/chats/model-configs", s.listModelConfigs)
	chat("GET", "/chats/{chat}", s.getChat)
	chat("PATCH", "/chats/{chat}", s.patchChat)
	chat("DELETE", "/chats/{chat}", s.deleteChat)
	chat("GET", "/chats/{chat}/messages", s.listMessages)
	chat("POST", "/chats/{chat}/messages", s.sendMessage)
	chat("PATCH", "/chats/{chat}/messages/{message}", s.editMessage)
	chat("DELETE", "/chats/{chat}/queue/{queuedMessage}", s.deleteQueued)
	chat("POST", "/chats/{chat}/queue/{queuedMessage}/promote", s.promoteQueued)
	chat("POST", "/chats/{chat}/interrupt", s.interrupt)
	chat("POST", "/chats/{chat}/tool-results", s.submitToolResults)
	chat("POST", "/chats/{chat}/compact", s.compact)
	chat("POST", "/chats/{chat}/clear", s.clear)
	chat("POST", "/chats/{chat}/reconcile-invalid", s.reconcileInvalid)
	chat("GET", "/users/me", s.me)
	chat("GET", "/requests/{request_id}", s.lookupRequest)

	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle("POST "+prefix+"/auth/login", s.instrument("POST /api/*/auth/login", s.handle(s.login)))
		s.mux.Handle("POST "+prefix+"/auth/logout", s.instrument("POST /api/*/auth/logout", s.handle(s.logout)))
		// Unknown API paths answer JSON, not the UI's index page.
		s.mux.Handle(prefix+"/", s.handle(func(w http.ResponseWriter, r *http.Request) error {
			return errNotFoundRoute
		}))
	}
	s.mux.Handle("GET /healthz", s.instrument("GET /healthz", s.handle(s.healthz)))
	if s.deps.Metrics != nil {
		s.mux.Handle("GET /metrics", s.deps.Metrics.Handler())
	}
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// healthz answers 503 with its own body when the database does not answer.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		_, err := tx.UserCount(r.Context())
		return err
	})
	if err != nil {
		s.deps.Log.Warn("health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "message": "the database does not answer; see the server log"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "database": s.deps.Store.Dialect()})
	return nil
}

// HandleChatStream registers a WebSocket route under both prefixes for a
// chat the caller may see (404 otherwise). replica, when non-nil, admits a
// peer replica without a user (the parts endpoint).
func (s *Server) HandleChatStream(path string, h func(w http.ResponseWriter, r *http.Request, chatID uuid.UUID), replica func(*http.Request) bool) {
	handler := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathUUID(r, "chat")
		if err != nil {
			return err
		}
		if replica == nil || !replica(r) {
			u, err := s.Authenticate(r)
			if err != nil {
				return err
			}
			err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
				_, err := s.readChat(r.Context(), &caller{user: u}, tx, id)
				return err
			})
			if err != nil {
				return err
			}
		}
		h(w, r, id)
		return nil
	})
	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle("GET "+prefix+path, handler)
	}
}
