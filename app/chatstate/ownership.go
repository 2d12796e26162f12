package chatstate

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Acquire gives the chat to (worker, runner) and records the initial
// heartbeat. It only changes ownership (U -> O or O -> O).
func (t *Tx) Acquire(chatID, workerID, runnerID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, Acquire)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{UUID: workerID, Valid: true}),
		RunnerID: store.Some(uuid.NullUUID{UUID: runnerID, Valid: true}),
	}); err != nil {
		return Result{}, fmt.Errorf("acquire chat %s: %w", chatID, err)
	}
	if err := t.tx.HeartbeatInsert(t.ctx, chatID, runnerID, t.now); err != nil {
		return Result{}, fmt.Errorf("insert heartbeat: %w", err)
	}
	return s.end()
}

// Abandon clears the chat's ownership (O -> U).
func (t *Tx) Abandon(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, Abandon)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
	}); err != nil {
		return Result{}, fmt.Errorf("abandon chat %s: %w", chatID, err)
	}
	return s.end()
}
