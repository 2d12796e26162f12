package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanFileRow(row pgx.Row, withContent bool) (store.File, error) {
	var f store.File
	dst := []any{&f.ID, &f.OwnerID, &f.ChatID, &f.Name, &f.MediaType, &f.Size, &f.CreatedAt, &f.LinkedAt}
	if withContent {
		dst = append(dst, &f.Content)
	}
	if err := row.Scan(dst...); err != nil {
		return store.File{}, translate(err)
	}
	f.CreatedAt = utc(f.CreatedAt)
	f.LinkedAt = utcPtr(f.LinkedAt)
	if withContent && f.Content == nil {
		f.Content = []byte{}
	}
	return f, nil
}

func scanFile(row pgx.Row) (store.File, error)     { return scanFileRow(row, true) }
func scanFileInfo(row pgx.Row) (store.File, error) { return scanFileRow(row, false) }

// FileInsert stores an uploaded file, linked to no chat.
func (t *tx) FileInsert(ctx context.Context, p store.FileInsertParams) (store.File, error) {
	content := p.Content
	if content == nil {
		content = []byte{}
	}
	f, err := scanFile(t.tx.QueryRow(ctx,
		query.FileInsert,
		p.ID, p.OwnerID, p.Name, p.MediaType, int64(len(content)), content, p.Now))
	if err != nil {
		return store.File{}, fmt.Errorf("insert file for user %s: %w", p.OwnerID, err)
	}
	return f, nil
}

// FileGet reads a file with its content.
func (t *tx) FileGet(ctx context.Context, id uuid.UUID) (store.File, error) {
	f, err := scanFile(t.tx.QueryRow(ctx, query.FileGet, id))
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s: %w", id, err)
	}
	return f, nil
}

// FileListByChat lists a chat's files, earliest uploaded first.
func (t *tx) FileListByChat(ctx context.Context, chatID uuid.UUID) ([]store.File, error) {
	rows, err := t.tx.Query(ctx,
		query.FileListByChat, chatID)
	if err != nil {
		return nil, fmt.Errorf("list files of chat %s: %w", chatID, translate(err))
	}
	files, err := collect(rows, scanFileInfo)
	if err != nil {
		return nil, fmt.Errorf("list files of chat %s: %w", chatID, err)
	}
	return files, nil
}

// FileBytesByOwner sums the sizes of a user's files.
func (t *tx) FileBytesByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx,
		`SELECT COALESCE(SUM(size), 0)::bigint FROM chat_files WHERE owner_id = $1`, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sum files of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// FileCountByOwner counts a user's files.
func (t *tx) FileCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx,
		query.FileCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count files of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// FileLink links a file to a chat.
func (t *tx) FileLink(ctx context.Context, id, chatID uuid.UUID, now time.Time) error {
	tag, err := t.tx.Exec(ctx, query.FileLink,
		chatID, now, id)
	if err != nil {
		return fmt.Errorf("link file %s to chat %s: %w", id, chatID, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("link file %s to chat %s: %w", id, chatID, store.ErrNotFound)
	}
	return nil
}

// FileDelete removes one file.
func (t *tx) FileDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.FileDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete file %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

// FileDeleteUnlinked removes unlinked files uploaded before cutoff.
func (t *tx) FileDeleteUnlinked(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.FileDeleteUnlinked, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete unlinked files: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}
