package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// MCPUserTokenGet reads a user's sealed OAuth tokens for a server.
func (t *tx) MCPUserTokenGet(ctx context.Context, serverID, userID uuid.UUID) (store.MCPUserToken, error) {
	out := store.MCPUserToken{ServerID: serverID, UserID: userID}
	err := t.tx.QueryRow(ctx, query.MCPUserTokenGet, serverID, userID).
		Scan(&out.Sealed, &out.UpdatedAt)
	if err != nil {
		return store.MCPUserToken{}, fmt.Errorf("get OAuth tokens of user %s for MCP server %s: %w", userID, serverID, translate(err))
	}
	out.UpdatedAt = utc(out.UpdatedAt)
	return out, nil
}

// MCPUserTokenPut stores a user's sealed OAuth tokens for a server.
func (t *tx) MCPUserTokenPut(ctx context.Context, tok store.MCPUserToken) error {
	_, err := t.tx.Exec(ctx, query.MCPUserTokenPut,
		tok.ServerID, tok.UserID, tok.Sealed, tok.UpdatedAt)
	if err != nil {
		return fmt.Errorf("put OAuth tokens of user %s for MCP server %s: %w", tok.UserID, tok.ServerID, translate(err))
	}
	return nil
}

// MCPUserTokenDelete forgets a user's OAuth tokens for a server.
func (t *tx) MCPUserTokenDelete(ctx context.Context, serverID, userID uuid.UUID) (bool, error) {
	tag, err := t.tx.Exec(ctx, query.MCPUserTokenDelete, serverID, userID)
	if err != nil {
		return false, fmt.Errorf("delete OAuth tokens of user %s for MCP server %s: %w", userID, serverID, translate(err))
	}
	return tag.RowsAffected() > 0, nil
}
