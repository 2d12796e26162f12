package api

import (
	"html"
	"net/http"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
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
