package sdk

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// MCPOAuthConfig is the admin view of an MCP server's OAuth client
// registration: the client secret is never shown.
type MCPOAuthConfig struct {
	ClientID          string `json:"client_id"`
	HasClientSecret   bool   `json:"has_client_secret"`
	ClientMetadataURL string `json:"client_metadata_url"`
	// PerUser: the server's identity is each user's (every user connects
	// it for themselves).
	PerUser bool `json:"per_user"`
}

// MCPOAuthRequest sets an MCP server's OAuth client registration: a
// pre-registered client (client_id, client_secret) and a Client ID
// Metadata Document URL, each optional; without them chatd registers
// dynamically where the authorization server offers it.
type MCPOAuthRequest struct {
	ClientID          string `json:"client_id,omitempty"`
	ClientSecret      string `json:"client_secret,omitempty"`
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// PerUser makes the server's identity each user's: every user
	// connects it for themselves (POST .../connect).
	PerUser bool `json:"per_user,omitempty"`
}

// MCP authorization states (MCPAuthStatus.Status).
const (
	// MCPAuthNeedsAuthorization: the server asked for authorization and a
	// person must open AuthorizationURL and consent.
	MCPAuthNeedsAuthorization = "needs_authorization"
	// MCPAuthAuthorized: chatd holds a token for the server.
	MCPAuthAuthorized = "authorized"
	// MCPAuthFailed: the last authorization failed (see Error).
	MCPAuthFailed = "failed"
	// MCPAuthNeedsUserAuthorization: the server's identity is each user's
	// (PerUser) and the caller has not connected it: POST
	// /chats/mcp-servers/{id}/connect begins their authorization.
	MCPAuthNeedsUserAuthorization = "needs_user_authorization"
)

// MCPAuthStatus is where an MCP server's authorization stands.
type MCPAuthStatus struct {
	Status string `json:"status"`
	// AuthorizationURL is the authorization server's consent page to open
	// while Status is needs_authorization.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// Error is why the last authorization failed.
	Error string `json:"error,omitempty"`
	// PerUser: the status is the caller's own connection to a server
	// whose identity is each user's.
	PerUser bool `json:"per_user,omitempty"`
}

// ConnectMCPServer begins the caller's own authorization of an MCP server
// whose identity is each user's (POST /chats/mcp-servers/{id}/connect):
// open the answer's AuthorizationURL to consent.
func (c *Client) ConnectMCPServer(ctx context.Context, id uuid.UUID) (MCPAuthStatus, error) {
	var out MCPAuthStatus
	return out, c.Do(ctx, http.MethodPost, "/chats/mcp-servers/"+id.String()+"/connect", nil, &out)
}

// DisconnectMCPServer ends the caller's own connection to an MCP server
// whose identity is each user's and forgets its tokens.
func (c *Client) DisconnectMCPServer(ctx context.Context, id uuid.UUID) error {
	return c.Do(ctx, http.MethodPost, "/chats/mcp-servers/"+id.String()+"/disconnect", nil, nil)
}
