package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// MCPTokenGet reads a server's sealed OAuth tokens.
func (t *tx) MCPTokenGet(ctx context.Context, serverID uuid.UUID) (store.MCPToken, error) {
	out := store.MCPToken{ServerID: serverID}
	err := t.tx.QueryRow(ctx, query.MCPTokenGet, serverID).
		Scan(&out.Sealed, &out.UpdatedAt)
	if err != nil {
		return store.MCPToken{}, fmt.Errorf("get OAuth tokens of MCP server %s: %w", serverID, translate(err))
	}
	out.UpdatedAt = utc(out.UpdatedAt)
	return out, nil
}

// MCPTokenPut stores a server's sealed OAuth tokens.
func (t *tx) MCPTokenPut(ctx context.Context, tok store.MCPToken) error {
	_, err := t.tx.Exec(ctx, query.MCPTokenPut,
		tok.ServerID, tok.Sealed, tok.UpdatedAt)
	if err != nil {
		return fmt.Errorf("put OAuth tokens of MCP server %s: %w", tok.ServerID, translate(err))
	}
	return nil
}

// MCPTokenDelete forgets a server's OAuth tokens.
func (t *tx) MCPTokenDelete(ctx context.Context, serverID uuid.UUID) (bool, error) {
	tag, err := t.tx.Exec(ctx, query.MCPTokenDelete, serverID)
	if err != nil {
		return false, fmt.Errorf("delete OAuth tokens of MCP server %s: %w", serverID, translate(err))
	}
	return tag.RowsAffected() > 0, nil
}
