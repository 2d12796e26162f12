package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// MCPUserTokenGet reads a user's sealed OAuth tokens for a server.
func (t *tx) MCPUserTokenGet(ctx context.Context, serverID, userID uuid.UUID) (store.MCPUserToken, error) {
	var (
		out     = store.MCPUserToken{ServerID: serverID, UserID: userID}
		updated string
	)
	err := t.tx.QueryRowContext(ctx, query.MCPUserTokenGet,
		serverID.String(), userID.String()).Scan(&out.Sealed, &updated)
	if err != nil {
		return store.MCPUserToken{}, fmt.Errorf("get OAuth tokens of user %s for MCP server %s: %w", userID, serverID, translate(err))
	}
	var s scanner
	s.time(&out.UpdatedAt, updated)
	return out, s.err
}

// MCPUserTokenPut stores a user's sealed OAuth tokens for a server.
func (t *tx) MCPUserTokenPut(ctx context.Context, tok store.MCPUserToken) error {
	_, err := t.exec(ctx, query.MCPUserTokenPut,
		tok.ServerID.String(), tok.UserID.String(), tok.Sealed, ts(tok.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put OAuth tokens of user %s for MCP server %s: %w", tok.UserID, tok.ServerID, err)
	}
	return nil
}

// MCPUserTokenDelete forgets a user's OAuth tokens for a server.
func (t *tx) MCPUserTokenDelete(ctx context.Context, serverID, userID uuid.UUID) (bool, error) {
	n, err := t.exec(ctx, query.MCPUserTokenDelete, serverID.String(), userID.String())
	if err != nil {
		return false, fmt.Errorf("delete OAuth tokens of user %s for MCP server %s: %w", userID, serverID, err)
	}
	return n > 0, nil
}
