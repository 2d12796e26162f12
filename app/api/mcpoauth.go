package api

import (
	"context"
	"errors"
	"html"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
)

// MCPOAuthCallbackPath is where MCP authorization servers send the
// person's browser back to chatd (the redirect URI chatd registers).
const MCPOAuthCallbackPath = "/mcp/oauth/callback"

// MCPOAuth completes and restarts MCP servers' authorizations.
type MCPOAuth interface {
	OAuthCallback(state, code, iss, errCode, errDesc string) error
	// Reconnect forgets a server's tokens and connects it again (false:
	// no such server).
	Reconnect(id uuid.UUID) bool
	// ConnectUser begins the caller's own authorization of a server whose
	// identity is each user's; DisconnectUser ends the caller's own
	// connection and forgets its tokens. An error with NotFound() true
	// is a server the caller may not use (404); any other is 409.
	ConnectUser(ctx context.Context, id uuid.UUID, u tools.User) (sdk.MCPAuthStatus, error)
	DisconnectUser(id uuid.UUID, u tools.User) error
}

// errNoSuchMCPServer answers a server the caller may not use.
var errNoSuchMCPServer = errors.New("no such MCP server")

// connectMCPServer answers POST /chats/mcp-servers/{id}/connect (any user
// who may use the server): the caller's own authorization of a per-user
// server begins, and the answer carries the consent page to open.
func (s *Server) connectMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := mcpServerID(r)
	if err != nil {
		return err
	}
	if s.deps.MCPOAuth == nil {
		return mcpUserAnswer(id, errNoSuchMCPServer)
	}
	st, err := s.deps.MCPOAuth.ConnectUser(r.Context(), id, c.toolUser())
	if err != nil {
		return mcpUserAnswer(id, err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// disconnectMCPServer answers POST /chats/mcp-servers/{id}/disconnect:
// the caller's own connection to a per-user server ends and its tokens
// are forgotten.
func (s *Server) disconnectMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := mcpServerID(r)
	if err != nil {
		return err
	}
	if s.deps.MCPOAuth == nil {
		return mcpUserAnswer(id, errNoSuchMCPServer)
	}
	if err := s.deps.MCPOAuth.DisconnectUser(id, c.toolUser()); err != nil {
		return mcpUserAnswer(id, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// mcpUserAnswer turns ConnectUser's and DisconnectUser's errors into
// answers.
func mcpUserAnswer(id uuid.UUID, err error) error {
	var nf interface{ NotFound() bool }
	if errors.Is(err, errNoSuchMCPServer) || errors.As(err, &nf) && nf.NotFound() {
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", "no MCP server "+id.String())
	}
	return newError(http.StatusConflict, sdk.CodeInvalidState, "The MCP server cannot be connected now.", err.Error())
}

// reconnectMCPServer answers POST /chats/mcp-servers/{id}/reconnect
// (admins): the server's tokens are dropped and it connects again, asking
// for a new authorization if it wants one.
func (s *Server) reconnectMCPServer(w http.ResponseWriter, r *http.Request, c *caller) error {
	return s.mcpAdminCall(w, r, c, true, 0, func(_ MCPAdmin, id uuid.UUID) (any, error) {
		if s.deps.MCPOAuth == nil || !s.deps.MCPOAuth.Reconnect(id) {
			return nil, newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", "no MCP server "+id.String())
		}
		return nil, nil
	})
}

// mcpOAuthCallback is the OAuth redirect target (no credentials: the
// state, which only the authorization in progress knows, authenticates
// the callback). It hands the code to the connection that waits for it.
func (s *Server) mcpOAuthCallback(w http.ResponseWriter, r *http.Request) error {
	if s.deps.MCPOAuth == nil {
		return newError(http.StatusNotFound, sdk.CodeNotFound, "Not found.", "")
	}
	q := r.URL.Query()
	err := s.deps.MCPOAuth.OAuthCallback(q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error"), q.Get("error_description"))
	msg := "The MCP server is connected; you can close this window."
	status := http.StatusOK
	if err != nil {
		status, msg = http.StatusBadRequest, "The authorization was not completed: "+err.Error()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><title>chatd</title><p>" + html.EscapeString(msg) + "</p>"))
	return nil
}
