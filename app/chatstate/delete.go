package chatstate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ReconcileInvalidState moves a chat in an invalid state to E0 or E1.
func (t *Tx) ReconcileInvalidState(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, ReconcileInvalidState)
	if err != nil {
		return Result{}, err
	}
	if err := t.answerOutstanding(chatID, reasonReconciled); err != nil {
		return Result{}, err
	}
	ce := sdk.ChatError{
		Message: "The chat was in an invalid state and has been reset. Send a new message or edit the history to continue.",
		Kind:    sdk.ChatErrorInvalidState,
	}
	if err := t.finishTurnRequest(chatID, OutcomeError, &ce); err != nil {
		return Result{}, err
	}
	lastErr, _ := json.Marshal(ce)
	if err := t.update(chatID, store.ChatPatch{
		Archived:                 store.Some(false),
		Status:                   store.Some(store.ChatStatusError),
		LastError:                store.Some(json.RawMessage(lastErr)),
		RequiresActionDeadlineAt: store.Some[*time.Time](nil),
		CompactionRequestedAt:    store.Some[*time.Time](nil),
	}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// Delete removes a chat and everything it owns. Deleting is not a state
// transition; it is here so the row lock orders it with transitions. The
// result has the chat as deleted and StateN.
func (t *Tx) Delete(chatID uuid.UUID) (Result, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return Result{}, err
	}
	if st == StateN {
		return Result{}, fmt.Errorf("chat %s: %w", chatID, ErrNotFound)
	}
	// Requests whose turn never finished end with the chat.
	if err := t.finishTurnRequest(chatID, OutcomeCancelled, nil); err != nil {
		return Result{}, err
	}
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return Result{}, err
	}
	for _, q := range queue {
		if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
			return Result{}, err
		}
	}
	t.deleted[chatID] = true
	if err := t.tx.ChatDelete(t.ctx, chatID); err != nil {
		return Result{}, fmt.Errorf("delete chat %s: %w", chatID, err)
	}
	return Result{Chat: c, State: StateN}, nil
}
