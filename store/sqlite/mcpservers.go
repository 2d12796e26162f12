package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanMCPServer(row rowScanner) (store.MCPServer, error) {
	var (
		m                store.MCPServer
		id, spec         string
		created, updated string
		enabled          int
	)
	if err := row.Scan(&id, &m.Name, &m.Source, &enabled, &m.Transport, &spec, &m.Secrets, &created, &updated); err != nil {
		return store.MCPServer{}, translate(err)
	}
	var s scanner
	s.uuid(&m.ID, id)
	s.time(&m.CreatedAt, created)
	s.time(&m.UpdatedAt, updated)
	if s.err != nil {
		return store.MCPServer{}, s.err
	}
	m.Enabled = enabled != 0
	m.Spec = []byte(spec)
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
	m, err := scanMCPServer(t.tx.QueryRowContext(ctx, query.MCPServerGet, id.String()))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("get MCP server %s: %w", id, err)
	}
	return m, nil
}

// MCPServerList lists the stored MCP servers by name.
func (t *tx) MCPServerList(ctx context.Context) ([]store.MCPServer, error) {
	rows, err := t.tx.QueryContext(ctx, query.MCPServerList)
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
	m, err := scanMCPServer(t.tx.QueryRowContext(ctx,
		query.MCPServerInsert,
		p.ID.String(), p.Name, p.Source, boolInt(p.Enabled), p.Transport, string(p.Spec), secretsArg(p.Secrets),
		ts(p.CreatedAt), ts(p.UpdatedAt)))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("insert MCP server %q: %w", p.Name, err)
	}
	return m, nil
}

// MCPServerUpdate replaces a stored server's settings.
func (t *tx) MCPServerUpdate(ctx context.Context, p store.MCPServer) (store.MCPServer, error) {
	m, err := scanMCPServer(t.tx.QueryRowContext(ctx,
		query.MCPServerUpdate,
		boolInt(p.Enabled), p.Transport, string(p.Spec), secretsArg(p.Secrets), ts(p.UpdatedAt), p.ID.String()))
	if err != nil {
		return store.MCPServer{}, fmt.Errorf("update MCP server %s: %w", p.ID, err)
	}
	return m, nil
}

// MCPServerDelete removes a stored server.
func (t *tx) MCPServerDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.MCPServerDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete MCP server %s: %w", id, err)
	}
	return n, nil
}
