package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// FileReader reads uploaded files. It is part of Reader.
type FileReader interface {
	// FileGet reads an uploaded file with its content.
	FileGet(ctx context.Context, id uuid.UUID) (File, error)

	// FileListByChat lists the files a chat holds, earliest uploaded first
	// (created_at, id), without their content.
	FileListByChat(ctx context.Context, chatID uuid.UUID) ([]File, error)

	// FileBytesByOwner sums the sizes of a user's files (the upload quota).
	FileBytesByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// FileCountByOwner counts a user's files (the per-user cap).
	FileCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)
}

// FileTx writes uploaded files. It is part of Tx.
type FileTx interface {
	// FileInsert stores an uploaded file, linked to no chat.
	FileInsert(ctx context.Context, p FileInsertParams) (File, error)

	// FileLink links a file to a chat at now (linked_at keeps the first
	// link's time); ErrNotFound when the file does not exist.
	FileLink(ctx context.Context, id, chatID uuid.UUID, now time.Time) error

	// FileDelete removes one file and reports whether it existed.
	FileDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// FileDeleteUnlinked removes the files no chat holds that were uploaded
	// before cutoff, and reports how many went.
	FileDeleteUnlinked(ctx context.Context, cutoff time.Time) (int64, error)
}

// File is one row of chat_files: an uploaded attachment. Content is nil
// when the row was read without it (FileListByChat).
type File struct {
	ID        uuid.UUID
	OwnerID   uuid.UUID
	ChatID    uuid.NullUUID // the chat that holds it, once a message used it
	Name      string
	MediaType string
	Size      int64
	Content   []byte
	CreatedAt time.Time
	LinkedAt  *time.Time
}

// FileInsertParams create an unlinked file.
type FileInsertParams struct {
	ID        uuid.UUID
	OwnerID   uuid.UUID
	Name      string
	MediaType string
	Content   []byte
	Now       time.Time
}
