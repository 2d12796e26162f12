package postgres

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
	var id uuid.UUID
	if err := t.tx.QueryRow(ctx, query.ChatImportGet,
		ownerID, exportID).Scan(&id); err != nil {
		return uuid.Nil, fmt.Errorf("read import %q of user %s: %w", exportID, ownerID, translate(err))
	}
	return id, nil
}

// ChatImportInsert records a user's import of an export.
func (t *tx) ChatImportInsert(ctx context.Context, ownerID uuid.UUID, exportID string, chatID uuid.UUID, now time.Time) error {
	if _, err := t.tx.Exec(ctx, query.ChatImportInsert,
		ownerID, exportID, chatID, now); err != nil {
		return fmt.Errorf("record import %q of user %s: %w", exportID, ownerID, translate(err))
	}
	return nil
}

var _ store.ImportTx = (*tx)(nil)
