package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// MCPTokenReader reads the OAuth tokens of remote MCP servers. It is part
// of Reader.
type MCPTokenReader interface {
	// MCPTokenGet reads a server's tokens (ErrNotFound when none).
	MCPTokenGet(ctx context.Context, serverID uuid.UUID) (MCPToken, error)
}

// MCPTokenTx writes them. It is part of Tx; the writer is app/mcp (they
// are no chat state).
type MCPTokenTx interface {
	// MCPTokenPut stores a server's tokens, replacing any it had;
	// ErrForeignKey when no server has the id.
	MCPTokenPut(ctx context.Context, t MCPToken) error

	// MCPTokenDelete forgets a server's tokens and reports whether it had
	// any.
	MCPTokenDelete(ctx context.Context, serverID uuid.UUID) (bool, error)
}

// MCPToken is one row of mcp_oauth_tokens: an MCP server's OAuth client
// and tokens, sealed (the store never sees them in the clear). The row
// goes with its server.
type MCPToken struct {
	ServerID  uuid.UUID
	Sealed    []byte
	UpdatedAt time.Time
}
