package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// ChatImportGet returns the chat a user's import of an export created.
func (t *tx) ChatImportGet(ctx context.Context, ownerID uuid.UUID, exportID string) (uuid.UUID, error) {
	var id string
	if err := t.tx.QueryRowContext(ctx, query.ChatImportGet,
		ownerID.String(), exportID).Scan(&id); err != nil {
		return uuid.Nil, fmt.Errorf("read import %q of user %s: %w", exportID, ownerID, translate(err))
	}
	var s scanner
	var chat uuid.UUID
	s.uuid(&chat, id)
	return chat, s.err
}

// ChatImportInsert records a user's import of an export.
func (t *tx) ChatImportInsert(ctx context.Context, ownerID uuid.UUID, exportID string, chatID uuid.UUID, now time.Time) error {
	if _, err := t.exec(ctx, query.ChatImportInsert,
		ownerID.String(), exportID, chatID.String(), ts(now)); err != nil {
		return fmt.Errorf("record import %q of user %s: %w", exportID, ownerID, err)
	}
	return nil
}

var _ store.ImportTx = (*tx)(nil)
