package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// MCPUserTokenReader reads the per-user OAuth tokens of remote MCP servers
// whose identity is each user's. It is part of Reader.
type MCPUserTokenReader interface {
	// MCPUserTokenGet reads a user's tokens for a server (ErrNotFound
	// when none).
	MCPUserTokenGet(ctx context.Context, serverID, userID uuid.UUID) (MCPUserToken, error)
}

// MCPUserTokenTx writes them. It is part of Tx; the writer is app/mcp.
type MCPUserTokenTx interface {
	// MCPUserTokenPut stores a user's tokens for a server, replacing any;
	// ErrForeignKey when no server or no user has the id.
	MCPUserTokenPut(ctx context.Context, t MCPUserToken) error

	// MCPUserTokenDelete forgets a user's tokens for a server and reports
	// whether there were any.
	MCPUserTokenDelete(ctx context.Context, serverID, userID uuid.UUID) (bool, error)
}

// MCPUserToken is one row of mcp_user_oauth_tokens: a user's OAuth client
// and tokens for an MCP server, sealed. The row goes with its server and
// its user.
type MCPUserToken struct {
	ServerID  uuid.UUID
	UserID    uuid.UUID
	Sealed    []byte
	UpdatedAt time.Time
}
