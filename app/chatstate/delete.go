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

// Delete removes a chat, its descendants and everything they own (the
// database cascades). Deleting is not a state transition; it is here so
// the row locks order it with transitions: the chat is locked first, then
// each descendant, parents first, as SetArchivedFamily does. Every deleted
// chat's unfinished requests end as cancelled, and each gets a chat:update
// after commit. The result has the chat as deleted and StateN, and the
// descendants in Members.
func (t *Tx) Delete(chatID uuid.UUID) (Result, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return Result{}, err
	}
	if st == StateN {
		return Result{}, fmt.Errorf("chat %s: %w", chatID, ErrNotFound)
	}
	family, err := t.tx.ChatDescendants(t.ctx, c.Root())
	if err != nil {
		return Result{}, fmt.Errorf("list family of chat %s: %w", chatID, err)
	}
	res := Result{Chat: c, State: StateN}
	for _, member := range parentsFirst(chatID, family) {
		mc, exists, err := t.lock(member.ID)
		if err != nil {
			return Result{}, err
		}
		if exists {
			res.Members = append(res.Members, mc)
		}
	}
	for _, gone := range append([]store.Chat{c}, res.Members...) {
		if err := t.cancelRequests(gone.ID); err != nil {
			return Result{}, err
		}
		t.deleted[gone.ID] = gone
	}
	if err := t.tx.ChatDelete(t.ctx, chatID); err != nil {
		return Result{}, fmt.Errorf("delete chat %s: %w", chatID, err)
	}
	return res, nil
}

// cancelRequests ends the requests of a chat that is going away: the
// current turn's, and every queued message's.
func (t *Tx) cancelRequests(chatID uuid.UUID) error {
	if err := t.finishTurnRequest(chatID, OutcomeCancelled, nil); err != nil {
		return err
	}
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return fmt.Errorf("list queue of chat %s: %w", chatID, err)
	}
	for _, q := range queue {
		if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
			return err
		}
	}
	return nil
}
