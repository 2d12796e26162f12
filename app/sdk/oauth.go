package sdk

// MCPOAuthConfig is the admin view of an MCP server's OAuth client
// registration: the client secret is never shown.
type MCPOAuthConfig struct {
	ClientID          string `json:"client_id"`
	HasClientSecret   bool   `json:"has_client_secret"`
	ClientMetadataURL string `json:"client_metadata_url"`
}

// MCPOAuthRequest sets an MCP server's OAuth client registration: a
// pre-registered client (client_id, client_secret) and a Client ID
// Metadata Document URL, each optional; without them chatd registers
// dynamically where the authorization server offers it.
type MCPOAuthRequest struct {
	ClientID          string `json:"client_id,omitempty"`
	ClientSecret      string `json:"client_secret,omitempty"`
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
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
)

// MCPAuthStatus is where an MCP server's authorization stands.
type MCPAuthStatus struct {
	Status string `json:"status"`
	// AuthorizationURL is the authorization server's consent page to open
	// while Status is needs_authorization.
	AuthorizationURL string `json:"authorization_url,omitempty"`
	// Error is why the last authorization failed.
	Error string `json:"error,omitempty"`
}
