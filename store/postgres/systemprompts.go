package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// ChatSystemPromptGet reads a chat's system prompt ("" when none).
func (t *tx) ChatSystemPromptGet(ctx context.Context, chatID uuid.UUID) (string, error) {
	var text string
	err := translate(t.tx.QueryRow(ctx, `SELECT text FROM chat_system_prompts WHERE chat_id = $1`, chatID).Scan(&text))
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
		_, err = t.tx.Exec(ctx, `DELETE FROM chat_system_prompts WHERE chat_id = $1`, chatID)
	} else {
		_, err = t.tx.Exec(ctx, `INSERT INTO chat_system_prompts (chat_id, text, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (chat_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`,
			chatID, text, now)
	}
	if err != nil {
		return fmt.Errorf("write the system prompt of chat %s: %w", chatID, translate(err))
	}
	return nil
}
