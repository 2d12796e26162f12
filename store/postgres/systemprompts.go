package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// ChatSystemPromptGet reads a chat's system prompt ("" when none).
func (t *tx) ChatSystemPromptGet(ctx context.Context, chatID uuid.UUID) (string, error) {
	var text string
	err := translate(t.tx.QueryRow(ctx, query.ChatSystemPromptGet, chatID).Scan(&text))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the system prompt of chat %s: %w", chatID, err)
	}
	return text, nil
}

// ChatSystemPromptSet writes a chat's system prompt; "" removes it.
func (t *tx) ChatSystemPromptSet(ctx context.Context, chatID uuid.UUID, text string, now time.Time) error {
	var err error
	if text == "" {
		_, err = t.tx.Exec(ctx, query.ChatSystemPromptSetDelete, chatID)
	} else {
		_, err = t.tx.Exec(ctx, query.ChatSystemPromptSetInsert,
			chatID, text, now)
	}
	if err != nil {
		return fmt.Errorf("write the system prompt of chat %s: %w", chatID, translate(err))
	}
	return nil
}
