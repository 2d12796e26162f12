package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// SystemPromptReader reads chats' system prompts. It is part of Reader.
// A chat's system prompt is metadata kept beside the chat (issue 33): the
// worker reads it at every model call, so a change applies from the next.
type SystemPromptReader interface {
	// ChatSystemPromptGet reads a chat's system prompt ("" when it has none).
	ChatSystemPromptGet(ctx context.Context, chatID uuid.UUID) (string, error)
}

// SystemPromptTx writes chats' system prompts. It is part of Tx; the
// writer is app/chatstate.
type SystemPromptTx interface {
	// ChatSystemPromptSet writes a chat's system prompt; "" removes it.
	// A chat that does not exist is ErrForeignKey.
	ChatSystemPromptSet(ctx context.Context, chatID uuid.UUID, text string, now time.Time) error
}
