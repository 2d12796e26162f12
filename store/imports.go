package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// ImportReader reads the record of chat imports. It is part of Reader.
type ImportReader interface {
	// ChatImportGet returns the chat a user's import of an export created
	// (ErrNotFound: the user has not imported it, or that chat is gone).
	ChatImportGet(ctx context.Context, ownerID uuid.UUID, exportID string) (uuid.UUID, error)
}

// ImportTx records chat imports. It is part of Tx; the writer is
// app/chatstate (Import).
type ImportTx interface {
	// ChatImportInsert records that a user's import of an export created
	// chatID; a second record for the same (owner, export) is ErrConflict.
	ChatImportInsert(ctx context.Context, ownerID uuid.UUID, exportID string, chatID uuid.UUID, now time.Time) error
}
