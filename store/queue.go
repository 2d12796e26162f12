package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// QueueReader reads a chat's queued messages. It is part of Reader.
type QueueReader interface {
	// QueueList returns the queue in position order.
	QueueList(ctx context.Context, chatID uuid.UUID) ([]QueuedMessage, error)

	// QueueGet reads one queued message of a chat.
	QueueGet(ctx context.Context, chatID uuid.UUID, id int64) (QueuedMessage, error)

	// QueueCount counts a chat's queued messages.
	QueueCount(ctx context.Context, chatID uuid.UUID) (int64, error)
}

// QueueTx writes a chat's queued messages. It is part of Tx; only
// app/chatstate calls it (DESIGN.md rule 1).
type QueueTx interface {
	// QueueInsert appends a queued message at the tail.
	QueueInsert(ctx context.Context, p QueueInsertParams) (QueuedMessage, error)

	// QueueSetPosition moves a queued message to position.
	QueueSetPosition(ctx context.Context, chatID uuid.UUID, id int64, position int64) error

	// QueueDelete removes one queued message and reports how many rows went.
	QueueDelete(ctx context.Context, chatID uuid.UUID, id int64) (int64, error)

	// QueueDeleteAll empties a chat's queue and reports how many rows went.
	QueueDeleteAll(ctx context.Context, chatID uuid.UUID) (int64, error)
}

// QueuedMessage is one row of chat_queued_messages.
type QueuedMessage struct {
	ID              int64
	ChatID          uuid.UUID
	Position        int64
	CreatedBy       uuid.NullUUID
	Content         json.RawMessage
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	RequestID       uuid.NullUUID
	// HookContext is the lifecycle hook context the prompt enters history
	// with (app/chatstate's JSON array), nil when there is none.
	HookContext json.RawMessage
	CreatedAt   time.Time
}

// QueueInsertParams are the columns of a new queued message.
type QueueInsertParams struct {
	ChatID          uuid.UUID
	CreatedBy       uuid.NullUUID
	Content         json.RawMessage
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	RequestID       uuid.NullUUID
	HookContext     json.RawMessage // nil: none
	Now             time.Time
}
