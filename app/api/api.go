// Package api serves chatd's HTTP API (API.md): chat routes under /api/v2
// and /api/experimental, auth, health and metrics. Handlers translate
// requests into chatstate transitions and return their errors; one wrapper
// (Server.handle) answers them through the one error mapping (errors.go)
// and logs the unexpected ones with Deps.Log.
//
// Files by resource: chats.go (create, list, get, update, delete),
// messages.go (list, send, edit), queue.go (queued messages), actions.go
// (interrupt, tool results, compaction, clear, reconcile), models.go,
// mcp.go (the MCP servers, a chat's selection of them), requests.go
// (durable request claims and lookup), auth.go (users, login),
// csrf.go (the cross-site check, the Secure cookie, trusted proxies).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/usage"
	"github.com/chatd/chatd/app/webhooks"
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
	// MaxQueryLen caps the chat list's q search, in characters.
	MaxQueryLen = 1000
)

// Config holds the API's limits. Zero values take the Defaults.
type Config struct {
	// MaxBodyBytes caps every request body (413 TOO_LARGE beyond).
	MaxBodyBytes int64
	// MaxTextBytes caps the text of one message (413 TOO_LARGE beyond).
	MaxTextBytes int
	// CookieSecure says when the session cookie is marked Secure
	// (CookieSecureAuto when empty: behind HTTPS).
	CookieSecure CookieSecureMode
	// TrustedProxies are the peers whose X-Forwarded-Proto is believed
	// (for the Secure cookie and the forgery check's own origin).
	TrustedProxies []netip.Prefix
	// Limits are the per-user rates and quotas (limits.go); zero fields
	// are unlimited.
	Limits Limits
	// Pprof serves /debug/pprof/ to admins; off, the path is 404.
	Pprof bool
	// StreamAuthInterval is how often an open stream re-checks its
	// credential (DefaultStreamAuthInterval when zero).
	StreamAuthInterval time.Duration
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

// MCPServers is the configured MCP servers (app/mcp.Manager).
type MCPServers interface {
	// Status lists every configured server u may use with its state and
	// tools, sorted by name. It starts connecting servers not yet used and
	// does not wait for them.
	Status(ctx context.Context, u tools.User) []sdk.MCPServer
	// Allows reports whether id is a configured server's id that u may
	// use.
	Allows(id uuid.UUID, u tools.User) bool
}

// Deps are the API's collaborators.
type Deps struct {
	Machine *chatstate.Machine
	Store   store.ReadStore
	Models  Models
	Titles  TitleGenerator // optional
	// Log receives unexpected errors (answered 500) and failed health
	// checks; slog.Default() when nil.
	Log     *slog.Logger
	Metrics *Metrics // optional
	// Clock is the time source; clock.Real when nil.
	Clock clock.Clock
	// Tokens authenticates, mints sessions and revokes them (required:
	// the API holds only a read store, and writes users and tokens here).
	Tokens *auth.Tokens
	// MCP is the configured MCP servers (nil: none configured).
	MCP MCPServers
	// Projects owns projects and their memory (nil: the routes are 404).
	Projects *projects.Service
	// MCPAdmin manages the stored MCP servers (nil: no admin routes).
	MCPAdmin MCPAdmin
	// ModelConfigs administers providers and model configs (nil: the
	// admin routes answer 404).
	ModelConfigs ModelConfigs
	// Hooks dispatches the lifecycle hooks of admission (session_start,
	// user_prompt_submit); nil: hooks off.
	Hooks *hooks.Dispatcher
	// Files stores attachments (nil: file parts and /files are refused).
	Files *files.Service
	// Backup snapshots the SQLite database for GET /admin/backup and
	// returns the snapshot open at its start (nil: PostgreSQL, the route
	// points to pg_dump).
	Backup func(ctx context.Context) (*os.File, error)
	// Usage judges budgets (nil: none are enforced; reports still work).
	Usage *usage.Service
	// Schedules and Webhooks serve their routes (404 without them).
	Schedules *schedules.Service
	Webhooks  *webhooks.Service
	// Elicitations hears of answered MCP elicitations (nil: the waiting
	// replica finds the answer at its next re-read).
	Elicitations ElicitationNotifier
	// MCPOAuth completes MCP servers' authorizations at their callback
	// (nil: the callback answers 404).
	MCPOAuth MCPOAuth
	// MCPCatalog reads the MCP servers' resources and prompts
	// (mcpresources.go; nil: those routes answer 404).
	MCPCatalog MCPCatalog
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	deps    Deps
	mux     *routeMux
	guards  *guards
	streams streamAuth
}

// New builds the API handler.
func New(cfg Config, deps Deps) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxTextBytes == 0 {
		cfg.MaxTextBytes = DefaultMaxTextBytes
	}
	if cfg.CookieSecure == "" {
		cfg.CookieSecure = CookieSecureAuto
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	s := &Server{cfg: cfg, deps: deps, mux: &routeMux{ServeMux: http.NewServeMux()}, guards: newGuards(cfg.Limits, deps.Clock)}
	s.routes()
	return s
}

// Handle registers an extra route (the app adds the UI and streams).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

func (s *Server) routes() {
	chat := func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error) {
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			s.mux.Handle(method+" "+prefix+path, s.instrument(method+" /api/*"+path, s.handle(s.authed(s.limitWrites(h)))))
		}
	}
	chat("POST", "/chats", s.createChat)
	chat("GET", "/chats", s.listChats)
	chat("GET", "/chats/models", s.listModels)
	chat("GET", "/chats/model-configs", s.listModelConfigs)
	chat("GET", "/chats/mcp-servers", s.listMCPServers)
	// MCP server admin: PATCH, DELETE and POST .../test only, never a GET
	// or POST shaped /chats/<word>/{id} (it collides with /chats/{chat}/messages).
	chat("POST", "/chats/mcp-servers", s.createMCPServer)
	chat("PATCH", "/chats/mcp-servers/{id}", s.patchMCPServer)
	chat("DELETE", "/chats/mcp-servers/{id}", s.deleteMCPServer)
	chat("POST", "/chats/mcp-servers/{id}/test", s.testMCPServer)
	chat("POST", "/chats/mcp-servers/{id}/reconnect", s.reconnectMCPServer)
	chat("POST", "/chats/mcp-servers/{id}/connect", s.connectMCPServer)
	chat("POST", "/chats/mcp-servers/{id}/disconnect", s.disconnectMCPServer)
	s.mcpCatalogRoutes(chat) // mcpresources.go
	s.providerRoutes(chat)
	chat("POST", "/chats/model-configs/{modelConfig}/test", s.testModelConfig)
	chat("GET", "/chats/{chat}", s.getChat)
	chat("PATCH", "/chats/{chat}", s.patchChat)
	chat("DELETE", "/chats/{chat}", s.deleteChat)
	chat("GET", "/chats/{chat}/messages", s.listMessages)
	chat("POST", "/chats/{chat}/messages", s.sendMessage)
	chat("PATCH", "/chats/{chat}/messages/{message}", s.editMessage)
	s.versionRoutes(chat) // versions.go
	s.exportRoutes(chat)  // export.go
	chat("DELETE", "/chats/{chat}/queue/{queuedMessage}", s.deleteQueued)
	chat("POST", "/chats/{chat}/queue/{queuedMessage}/promote", s.promoteQueued)
	chat("POST", "/chats/{chat}/interrupt", s.interrupt)
	chat("POST", "/chats/{chat}/tool-results", s.submitToolResults)
	chat("POST", "/chats/{chat}/tool-approvals", s.submitToolApprovals)
	chat("GET", "/chats/{chat}/elicitations", s.listElicitations)
	chat("POST", "/chats/{chat}/elicitation-responses", s.submitElicitationResponse)
	chat("POST", "/chats/{chat}/compact", s.compact)
	chat("POST", "/chats/{chat}/clear", s.clear)
	chat("POST", "/chats/{chat}/reconcile-invalid", s.reconcileInvalid)
	chat("GET", "/users/me", s.me)
	s.usageRoutes()
	chat("GET", "/requests/{request_id}", s.lookupRequest)
	chat("POST", "/requests/{request_id}/reconcile", s.reconcileRequest)
	chat("POST", "/chats/{chat}/tool-calls/{tool_call_id}/reconcile", s.reconcileToolCall)
	s.projectRoutes(chat)
	s.scheduleRoutes(chat) // schedules.go
	s.webhookRoutes(chat)  // webhooks.go
	s.backupRoutes(chat)
	s.userRoutes() // users.go
	s.fileRoutes()
	s.openAPIRoute() // openapi.go

	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle("POST "+prefix+"/auth/login", s.instrument("POST /api/*/auth/login", s.handle(s.limitLogins(s.login))))
		s.mux.Handle("POST "+prefix+"/auth/logout", s.instrument("POST /api/*/auth/logout", s.handle(s.logout)))
		// Unknown API paths answer JSON, not the UI's index page.
		s.mux.Handle(prefix+"/", s.handle(func(w http.ResponseWriter, r *http.Request) error {
			return errNotFoundRoute
		}))
	}
	s.mux.Handle("GET /healthz", s.instrument("GET /healthz", s.handle(s.healthz)))
	s.mux.Handle("GET "+MCPOAuthCallbackPath, s.instrument("GET "+MCPOAuthCallbackPath, s.handle(s.mcpOAuthCallback)))
	s.pprofRoutes()
	if s.deps.Metrics != nil {
		// On the main address only admins read metrics; scrapers get their
		// own address without auth (app's MetricsAddr, MetricsHandler).
		metrics := s.deps.Metrics.Handler()
		s.mux.Handle("GET /metrics", s.handle(s.authed(func(w http.ResponseWriter, r *http.Request, c *caller) error {
			if !c.user.Admin {
				return errAdminOnly
			}
			metrics.ServeHTTP(w, r)
			return nil
		})))
	}
}

// ServeHTTP serves the API. Before routing it sets the headers every
// answer carries, refuses forged cross-site state changes (csrf.go) and
// answers a known path with the wrong method 405 in JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w, r)
	if err := s.checkForgery(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	if allow := s.allowedMethods(r); allow != nil {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, errMethodNotAllowed(r.Method, allow))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// secureHeaders sets what every answer carries: no content sniffing, and
// Connection: close after a request with a Transfer-Encoding. net/http
// drops the Content-Length of a request that has both (RFC 9112 6.1:
// a possible smuggling attempt, after which the server must close the
// connection), and a handler cannot tell that it had one, so every such
// connection closes; the few clients that stream request bodies only lose
// keep-alive.
func secureHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if len(r.TransferEncoding) > 0 {
		h.Set("Connection", "close")
	}
}

// fallbacks are the catch-all patterns: the UI's and the API's JSON 404.
var fallbacks = map[string]bool{"/": true, "/api/v2/": true, "/api/experimental/": true}

// routeMethods are the methods tried to tell a 405 from a 404.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods returns the methods r's path has a route for when r's own
// method has none (nil otherwise). The catch-all patterns hide the mux's
// own 405 (a plain-text one), so it is decided here.
func (s *Server) allowedMethods(r *http.Request) []string {
	_, pattern := s.mux.Handler(r)
	if !fallbacks[pattern] {
		return nil
	}
	var allow []string
	for _, m := range routeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); !fallbacks[pattern] && namesResource(pattern, r.URL.Path) {
			allow = append(allow, m)
		}
	}
	if allow == nil && pattern == "/" && r.Method != http.MethodGet && r.Method != http.MethodHead &&
		r.URL.Path != "/api" && !strings.HasPrefix(r.URL.Path, "/api/") {
		// The UI (the app's "/") answers its pages and files to GET and
		// HEAD only.
		allow = []string{http.MethodGet, http.MethodHead}
	}
	return allow
}

// healthz answers 503 with its own body when the database does not answer,
// and while a write refused for a full disk is recent (healthStorageWindow).
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
	if at, full := s.guards.storageFullSince(); full {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "storage_full", "database": s.deps.Store.Dialect(),
			"message": "a write failed at " + at.UTC().Format(time.RFC3339) + " because the storage is full; free space"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "database": s.deps.Store.Dialect()})
	return nil
}

// HandleUserStream registers a per-user WebSocket endpoint (GET, under
// /api/v2 and /api/experimental): the caller is authenticated and holds
// one of their stream slots (CHATD_MAX_STREAMS_PER_USER) while h runs.
func (s *Server) HandleUserStream(path string, h func(w http.ResponseWriter, r *http.Request, userID uuid.UUID)) {
	s.HandleUserStreamMethod(http.MethodGet, path, h)
}

// HandleUserStreamMethod is HandleUserStream for another method, e.g. a
// POST answered with a stream (app/aisdk).
func (s *Server) HandleUserStreamMethod(method, path string, h func(w http.ResponseWriter, r *http.Request, userID uuid.UUID)) {
	handler := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.Authenticate(r)
		if err != nil {
			return err
		}
		release, err := s.acquireStream(u.ID)
		if err != nil {
			return err
		}
		defer release()
		r, stop := s.guardStream(r, u.ID, nil)
		defer stop()
		h(w, r, u.ID)
		return nil
	})
	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle(method+" "+prefix+path, handler)
	}
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
			release, err := s.acquireStream(u.ID)
			if err != nil {
				return err
			}
			defer release()
			visible := func(ctx context.Context, u store.User) error {
				return s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
					_, err := s.readChat(ctx, &caller{user: u}, tx, id)
					return err
				})
			}
			if err := visible(r.Context(), u); err != nil {
				return err
			}
			var stop func()
			r, stop = s.guardStream(r, u.ID, visible)
			defer stop()
		}
		h(w, r, id)
		return nil
	})
	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle("GET "+prefix+path, handler)
	}
}
