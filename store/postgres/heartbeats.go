package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// HeartbeatInsert records a runner's lease on a chat, replacing the row of
// the same (chat, runner) pair: Acquire may run again for a runner whose
// earlier row was not cleaned up yet.
func (t *tx) HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, at time.Time) error {
	_, err := t.tx.Exec(ctx, `
		INSERT INTO chat_heartbeats (chat_id, runner_id, heartbeat_at) VALUES ($1, $2, $3)
		ON CONFLICT (chat_id, runner_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`,
		chatID, runnerID, at)
	if err != nil {
		return fmt.Errorf("insert heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	return nil
}
