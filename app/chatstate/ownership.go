package chatstate

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Acquire gives the chat to (worker, runner) and records the initial
// heartbeat. It only changes ownership.
func (t *Tx) Acquire(chatID, workerID, runnerID uuid.UUID) (store.Chat, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return store.Chat{}, err
	}
	if st == StateN {
		return store.Chat{}, &TransitionError{Transition: Acquire, From: st}
	}
	if _, ok := ownershipMatrix[OwnershipOf(c)][Acquire]; !ok {
		return store.Chat{}, &TransitionError{Transition: Acquire, From: st}
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{UUID: workerID, Valid: true}),
		RunnerID: store.Some(uuid.NullUUID{UUID: runnerID, Valid: true}),
	}); err != nil {
		return store.Chat{}, err
	}
	if err := t.tx.HeartbeatInsert(t.ctx, chatID, runnerID, t.now); err != nil {
		return store.Chat{}, fmt.Errorf("insert heartbeat: %w", err)
	}
	return t.tx.ChatGet(t.ctx, chatID)
}

// Abandon clears the chat's ownership.
func (t *Tx) Abandon(chatID uuid.UUID) (store.Chat, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return store.Chat{}, err
	}
	if _, ok := ownershipMatrix[OwnershipOf(c)][Abandon]; !ok || st == StateN {
		return store.Chat{}, &TransitionError{Transition: Abandon, From: st, Reason: "the chat is not owned"}
	}
	return t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{
		WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
	})
}
