package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// MCPTokenGet reads a server's sealed OAuth tokens.
func (t *tx) MCPTokenGet(ctx context.Context, serverID uuid.UUID) (store.MCPToken, error) {
	var (
		out     = store.MCPToken{ServerID: serverID}
		updated string
	)
	err := t.tx.QueryRowContext(ctx, query.MCPTokenGet,
		serverID.String()).Scan(&out.Sealed, &updated)
	if err != nil {
		return store.MCPToken{}, fmt.Errorf("get OAuth tokens of MCP server %s: %w", serverID, translate(err))
	}
	var s scanner
	s.time(&out.UpdatedAt, updated)
	return out, s.err
}

// MCPTokenPut stores a server's sealed OAuth tokens.
func (t *tx) MCPTokenPut(ctx context.Context, tok store.MCPToken) error {
	_, err := t.exec(ctx, query.MCPTokenPut,
		tok.ServerID.String(), tok.Sealed, ts(tok.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put OAuth tokens of MCP server %s: %w", tok.ServerID, err)
	}
	return nil
}

// MCPTokenDelete forgets a server's OAuth tokens.
func (t *tx) MCPTokenDelete(ctx context.Context, serverID uuid.UUID) (bool, error) {
	n, err := t.exec(ctx, query.MCPTokenDelete, serverID.String())
	if err != nil {
		return false, fmt.Errorf("delete OAuth tokens of MCP server %s: %w", serverID, err)
	}
	return n > 0, nil
}
