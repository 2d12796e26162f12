package store

import (
	"time"

	"github.com/google/uuid"
)

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
