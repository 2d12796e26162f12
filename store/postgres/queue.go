package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanQueued(row pgx.Row) (store.QueuedMessage, error) {
	var (
		q                    store.QueuedMessage
		content, hookContext []byte
	)
	err := row.Scan(&q.ID, &q.ChatID, &q.Position, &q.CreatedBy, &content, &q.ModelConfigID,
		&q.ReasoningEffort, &q.RequestID, &q.CreatedAt, &hookContext)
	if err != nil {
		return store.QueuedMessage{}, translate(err)
	}
	q.Content = rawJSON(content)
	if hookContext != nil {
		q.HookContext = rawJSON(hookContext)
	}
	q.CreatedAt = utc(q.CreatedAt)
	return q, nil
}

// QueueInsert appends a queued message after the current tail. Callers hold
// the chat lock, so two inserts never race for the same position.
func (t *tx) QueueInsert(ctx context.Context, p store.QueueInsertParams) (store.QueuedMessage, error) {
	q, err := scanQueued(t.tx.QueryRow(ctx, `
		INSERT INTO chat_queued_messages (
			chat_id, position, created_by, content, model_config_id, reasoning_effort,
			request_id, created_at, hook_context
		) VALUES (
			$1,
			(SELECT COALESCE(MAX(position), 0) + 1 FROM chat_queued_messages WHERE chat_id = $1),
			$2, $3, $4, $5, $6, $7, $8
		)
		RETURNING `+query.QueueColumns,
		p.ChatID, p.CreatedBy, p.Content, p.ModelConfigID, p.ReasoningEffort, p.RequestID, p.Now, nullJSONB(p.HookContext)))
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("queue message in chat %s: %w", p.ChatID, err)
	}
	return q, nil
}

// nullJSONB passes a nil document as SQL NULL.
func nullJSONB(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// QueueList returns the queue head first.
func (t *tx) QueueList(ctx context.Context, chatID uuid.UUID) ([]store.QueuedMessage, error) {
	rows, err := t.tx.Query(ctx,
		query.QueueList, chatID)
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
	q, err := scanQueued(t.tx.QueryRow(ctx,
		`SELECT `+query.QueueColumns+` FROM chat_queued_messages WHERE chat_id = $1 AND id = $2`, chatID, id))
	if err != nil {
		return store.QueuedMessage{}, fmt.Errorf("get queued message %d of chat %s: %w", id, chatID, err)
	}
	return q, nil
}

// QueueSetPosition moves a queued message to position.
func (t *tx) QueueSetPosition(ctx context.Context, chatID uuid.UUID, id int64, position int64) error {
	tag, err := t.tx.Exec(ctx,
		`UPDATE chat_queued_messages SET position = $3 WHERE chat_id = $1 AND id = $2`, chatID, id, position)
	if err != nil {
		return fmt.Errorf("move queued message %d of chat %s: %w", id, chatID, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("move queued message %d of chat %s: %w", id, chatID, store.ErrNotFound)
	}
	return nil
}

// QueueDelete removes one queued message; 0 rows is not an error, callers
// that need exactly one check the count.
func (t *tx) QueueDelete(ctx context.Context, chatID uuid.UUID, id int64) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.QueueDelete, chatID, id)
	if err != nil {
		return 0, fmt.Errorf("delete queued message %d of chat %s: %w", id, chatID, translate(err))
	}
	return tag.RowsAffected(), nil
}

// QueueDeleteAll empties a chat's queue.
func (t *tx) QueueDeleteAll(ctx context.Context, chatID uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.QueueDeleteAll, chatID)
	if err != nil {
		return 0, fmt.Errorf("clear queue of chat %s: %w", chatID, translate(err))
	}
	return tag.RowsAffected(), nil
}

// QueueCount counts a chat's queued messages.
func (t *tx) QueueCount(ctx context.Context, chatID uuid.UUID) (int64, error) {
	stable := t.stable(chatID)
	if n, ok := t.cache.QueueCount(chatID, t.tx.writes); ok && stable {
		return n, nil
	}
	var n int64
	if err := t.tx.QueryRow(ctx,
		query.QueueCount, chatID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queue of chat %s: %w", chatID, translate(err))
	}
	if stable {
		t.cache.KeepQueueCount(chatID, n, t.tx.writes)
	}
	return n, nil
}
