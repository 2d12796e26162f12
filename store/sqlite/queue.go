package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanQueued(row rowScanner) (store.QueuedMessage, error) {
	var (
		q                         store.QueuedMessage
		chatID, content, created  string
		createdBy, modelID, reqID sql.NullString
		hookContext               sql.NullString
	)
	err := row.Scan(&q.ID, &chatID, &q.Position, &createdBy, &content, &modelID,
		&q.ReasoningEffort, &reqID, &created, &hookContext)
	if err != nil {
		return store.QueuedMessage{}, translate(err)
	}
	var s scanner
	s.uuid(&q.ChatID, chatID)
	s.nullUUID(&q.CreatedBy, createdBy)
	s.nullUUID(&q.ModelConfigID, modelID)
	s.nullUUID(&q.RequestID, reqID)
	s.time(&q.CreatedAt, created)
	if s.err != nil {
		return store.QueuedMessage{}, s.err
	}
	q.Content = json.RawMessage(content)
	q.HookContext = rawJSON(hookContext)
	return q, nil
}

// readQueued reads one queued message; callers add the context of their
// operation.
func (t *tx) readQueued(ctx context.Context, chatID uuid.UUID, id int64) (store.QueuedMessage, error) {
	return scanQueued(t.tx.QueryRowContext(ctx,
		`SELECT `+query.QueueColumns+` FROM chat_queued_messages WHERE chat_id = ? AND id = ?`, chatID.String(), id))
}

// QueueInsert appends a queued message after the current tail. The single
// writer means two inserts never race for the same position.
func (t *tx) QueueInsert(ctx context.Context, p store.QueueInsertParams) (store.QueuedMessage, error) {
	if err := checkJSON(p.Content, p.HookContext); err != nil {
		return store.QueuedMessage{}, fmt.Errorf("queue message in chat %s: %w", p.ChatID, err)
	}
	var id int64
	err := t.tx.QueryRowContext(ctx, `
		INSERT INTO chat_queued_messages (
			chat_id, position, created_by, content, model_config_id, reasoning_effort,
			request_id, created_at, hook_context
		) VALUES (
			?1,
			(SELECT COALESCE(MAX(position), 0) + 1 FROM chat_queued_messages WHERE chat_id = ?1),
			?2, ?3, ?4, ?5, ?6, ?7, ?8
		)
		RETURNING id`,
		p.ChatID.String(), nullUUID(p.CreatedBy), nullJSON(p.Content), nullUUID(p.ModelConfigID),
		p.ReasoningEffort, nullUUID(p.RequestID), ts(p.Now), nullJSON(p.HookContext)).Scan(&id)
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("queue message in chat %s: %w", p.ChatID, translate(err))
	}
	// Read back after the queue-version trigger ran.
	q, err := t.readQueued(ctx, p.ChatID, id)
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("queue message in chat %s: %w", p.ChatID, err)
	}
	return q, nil
}

// QueueList returns the queue head first.
func (t *tx) QueueList(ctx context.Context, chatID uuid.UUID) ([]store.QueuedMessage, error) {
	rows, err := t.tx.QueryContext(ctx,
		query.QueueList, chatID.String())
	if err != nil {
		return nil, fmt.Errorf("list queue of chat %s: %w", chatID, translate(err))
	}
	queue, err := collect(rows, scanQueued)
	if err != nil {
		return nil, fmt.Errorf("list queue of chat %s: %w", chatID, err)
	}
	return queue, nil
}

// QueueGet reads one queued message of a chat.
func (t *tx) QueueGet(ctx context.Context, chatID uuid.UUID, id int64) (store.QueuedMessage, error) {
	q, err := t.readQueued(ctx, chatID, id)
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("get queued message %d of chat %s: %w", id, chatID, err)
	}
	return q, nil
}

// QueueSetPosition moves a queued message to position.
func (t *tx) QueueSetPosition(ctx context.Context, chatID uuid.UUID, id int64, position int64) error {
	n, err := t.exec(ctx,
		`UPDATE chat_queued_messages SET position = ? WHERE chat_id = ? AND id = ?`, position, chatID.String(), id)
	if err != nil {
		return fmt.Errorf("move queued message %d of chat %s: %w", id, chatID, err)
	}
	if n == 0 {
		return fmt.Errorf("move queued message %d of chat %s: %w", id, chatID, store.ErrNotFound)
	}
	return nil
}

// QueueDelete removes one queued message; 0 rows is not an error, callers
// that need exactly one check the count.
func (t *tx) QueueDelete(ctx context.Context, chatID uuid.UUID, id int64) (int64, error) {
	n, err := t.exec(ctx, query.QueueDelete, chatID.String(), id)
	if err != nil {
		return 0, fmt.Errorf("delete queued message %d of chat %s: %w", id, chatID, err)
	}
	return n, nil
}

// QueueDeleteAll empties a chat's queue.
func (t *tx) QueueDeleteAll(ctx context.Context, chatID uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.QueueDeleteAll, chatID.String())
	if err != nil {
		return 0, fmt.Errorf("clear queue of chat %s: %w", chatID, err)
	}
	return n, nil
}

// QueueCount counts a chat's queued messages.
func (t *tx) QueueCount(ctx context.Context, chatID uuid.UUID) (int64, error) {
	if n, ok := t.cachedQueueCount(chatID); ok {
		return n, nil
	}
	var n int64
	if err := t.tx.QueryRowContext(ctx,
		query.QueueCount, chatID.String()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queue of chat %s: %w", chatID, translate(err))
	}
	t.keepQueueCount(chatID, n)
	return n, nil
}
