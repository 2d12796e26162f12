package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// MCPServerReader reads the stored MCP servers. It is part of Reader.
type MCPServerReader interface {
	// MCPServerGet reads a stored MCP server (ErrNotFound when none).
	MCPServerGet(ctx context.Context, id uuid.UUID) (MCPServer, error)

	// MCPServerList lists the stored MCP servers by name.
	MCPServerList(ctx context.Context) ([]MCPServer, error)
}

// MCPServerTx writes the stored MCP servers. It is part of Tx.
type MCPServerTx interface {
	// MCPServerInsert stores an MCP server; ErrConflict when its id or
	// name is taken.
	MCPServerInsert(ctx context.Context, p MCPServer) (MCPServer, error)

	// MCPServerUpdate replaces a stored server's enabled, transport, spec
	// and secrets and sets updated_at to p.UpdatedAt; id, name, source and
	// created_at stay. ErrNotFound when none.
	MCPServerUpdate(ctx context.Context, p MCPServer) (MCPServer, error)

	// MCPServerDelete removes a stored server and reports whether it existed.
	MCPServerDelete(ctx context.Context, id uuid.UUID) (int64, error)
}

// MCP server sources (mcp_servers.source).
const (
	// MCPSourceDatabase: created through the API.
	MCPSourceDatabase = "database"
	// MCPSourceConfigFile: seeded from the MCP config file at start.
	MCPSourceConfigFile = "config_file"
)

// MCP server transports (mcp_servers.transport).
const (
	MCPTransportStdio = "stdio"
	MCPTransportHTTP  = "http"
)

// MCPServer is one stored MCP server (table mcp_servers). The store keeps
// Spec and Secrets as given: app/mcp decides what they hold.
type MCPServer struct {
	ID        uuid.UUID
	Name      string
	Source    string
	Enabled   bool
	Transport string
	// Spec is the server's non-secret settings, a JSON object.
	Spec json.RawMessage
	// Secrets is the sealed env and headers; nil when there are none.
	Secrets   []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}
