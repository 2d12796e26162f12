package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanMCPServer(row pgx.Row) (store.MCPServer, error) {
	var (
		m    store.MCPServer
		spec []byte
	)
	if err := row.Scan(&m.ID, &m.Name, &m.Source, &m.Enabled, &m.Transport, &spec, &m.Secrets, &m.CreatedAt, &m.UpdatedAt); err != nil {
		return store.MCPServer{}, translate(err)
	}
	m.Spec = spec
	m.CreatedAt, m.UpdatedAt = utc(m.CreatedAt), utc(m.UpdatedAt)
	if len(m.Secrets) == 0 {
		m.Secrets = nil
	}
	return m, nil
}

// secretsArg stores no secrets as NULL.
func secretsArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// MCPServerGet reads a stored MCP server.
func (t *tx) MCPServerGet(ctx context.Context, id uuid.UUID) (store.MCPServer, error) {
	m, err := scanMCPServer(t.tx.QueryRow(ctx, query.MCPServerGet, id))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("get MCP server %s: %w", id, err)
	}
	return m, nil
}

// MCPServerList lists the stored MCP servers by name.
func (t *tx) MCPServerList(ctx context.Context) ([]store.MCPServer, error) {
	rows, err := t.tx.Query(ctx, query.MCPServerList)
	if err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", translate(err))
	}
	out, err := collect(rows, scanMCPServer)
	if err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", err)
	}
	return out, nil
}

// MCPServerInsert stores an MCP server; a taken id or name is
// store.ErrConflict.
func (t *tx) MCPServerInsert(ctx context.Context, p store.MCPServer) (store.MCPServer, error) {
	m, err := scanMCPServer(t.tx.QueryRow(ctx,
		query.MCPServerInsert,
		p.ID, p.Name, p.Source, p.Enabled, p.Transport, string(p.Spec), secretsArg(p.Secrets), p.CreatedAt, p.UpdatedAt))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("insert MCP server %q: %w", p.Name, err)
	}
	return m, nil
}

// MCPServerUpdate replaces a stored server's settings.
func (t *tx) MCPServerUpdate(ctx context.Context, p store.MCPServer) (store.MCPServer, error) {
	m, err := scanMCPServer(t.tx.QueryRow(ctx,
		query.MCPServerUpdate,
		p.Enabled, p.Transport, string(p.Spec), secretsArg(p.Secrets), p.UpdatedAt, p.ID))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("update MCP server %s: %w", p.ID, err)
	}
	return m, nil
}

// MCPServerDelete removes a stored server.
func (t *tx) MCPServerDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.MCPServerDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete MCP server %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}
