package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanFileRow(row rowScanner, withContent bool) (store.File, error) {
	var (
		f                  store.File
		id, owner, created string
		chat, linked       sql.NullString
	)
	dst := []any{&id, &owner, &chat, &f.Name, &f.MediaType, &f.Size, &created, &linked}
	if withContent {
		dst = append(dst, &f.Content)
	}
	if err := row.Scan(dst...); err != nil {
		return store.File{}, translate(err)
	}
	var s scanner
	s.uuid(&f.ID, id)
	s.uuid(&f.OwnerID, owner)
	s.nullUUID(&f.ChatID, chat)
	s.time(&f.CreatedAt, created)
	s.timePtr(&f.LinkedAt, linked)
	if s.err != nil {
		return store.File{}, s.err
	}
	if withContent && f.Content == nil {
		f.Content = []byte{}
	}
	return f, nil
}

func scanFile(row rowScanner) (store.File, error)     { return scanFileRow(row, true) }
func scanFileInfo(row rowScanner) (store.File, error) { return scanFileRow(row, false) }

// FileInsert stores an uploaded file, linked to no chat.
func (t *tx) FileInsert(ctx context.Context, p store.FileInsertParams) (store.File, error) {
	content := p.Content
	if content == nil {
		content = []byte{}
	}
	f, err := scanFile(t.tx.QueryRowContext(ctx,
		query.FileInsert,
		p.ID.String(), p.OwnerID.String(), p.Name, p.MediaType, len(content), content, ts(p.Now)))
	if err != nil {
		return store.File{}, fmt.Errorf("insert file for user %s: %w", p.OwnerID, err)
	}
	return f, nil
}

// FileGet reads a file with its content.
func (t *tx) FileGet(ctx context.Context, id uuid.UUID) (store.File, error) {
	f, err := scanFile(t.tx.QueryRowContext(ctx,
		query.FileGet, id.String()))
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s: %w", id, err)
	}
	return f, nil
}

// FileListByChat lists a chat's files, earliest uploaded first.
func (t *tx) FileListByChat(ctx context.Context, chatID uuid.UUID) ([]store.File, error) {
	rows, err := t.tx.QueryContext(ctx,
		query.FileListByChat, chatID.String())
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
	if err := t.tx.QueryRowContext(ctx,
		`SELECT COALESCE(SUM(size), 0) FROM chat_files WHERE owner_id = ?`, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("sum files of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// FileCountByOwner counts a user's files.
func (t *tx) FileCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx,
		query.FileCountByOwner, ownerID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count files of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// FileLink links a file to a chat.
func (t *tx) FileLink(ctx context.Context, id, chatID uuid.UUID, now time.Time) error {
	n, err := t.exec(ctx, query.FileLink,
		chatID.String(), ts(now), id.String())
	if err != nil {
		return fmt.Errorf("link file %s to chat %s: %w", id, chatID, err)
	}
	if n == 0 {
		return fmt.Errorf("link file %s to chat %s: %w", id, chatID, store.ErrNotFound)
	}
	return nil
}

// FileDelete removes one file.
func (t *tx) FileDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.FileDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete file %s: %w", id, err)
	}
	return n, nil
}

// FileDeleteUnlinked removes unlinked files uploaded before cutoff.
func (t *tx) FileDeleteUnlinked(ctx context.Context, cutoff time.Time) (int64, error) {
	n, err := t.exec(ctx, query.FileDeleteUnlinked, ts(cutoff))
	if err != nil {
		return 0, fmt.Errorf("delete unlinked files: %w", err)
	}
	return n, nil
}
