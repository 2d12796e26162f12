package chatstate

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Step is one durable message suffix committed by the worker.
type Step struct {
	Messages []store.MessageInsertParams
	// Compaction marks a compaction step: it consumes the one-shot
	// compaction request in the same transaction.
	Compaction bool
}

// CommitStep inserts one step's messages while remaining running.
func (t *Tx) CommitStep(chatID uuid.UUID, st Step) ([]store.Message, error) {
	s, err := t.begin(chatID, CommitStep)
	if err != nil {
		return nil, err
	}
	msgs, err := t.insertSuffix(chatID, st.Messages)
	if err != nil {
		return nil, err
	}
	if st.Compaction {
		if err := t.update(chatID, store.ChatPatch{CompactionRequestedAt: store.Some[*time.Time](nil)}); err != nil {
			return nil, err
		}
	} else if err := t.update(chatID, store.ChatPatch{}); err != nil {
		return nil, err
	}
	_, err = s.end()
	return msgs, err
}

// FinishResult is what a turn-ending transition did.
type FinishResult struct {
	Promoted []store.Message
	State    State
}

// finishPromoting lands in waiting with an empty queue, or promotes the
// queue head and keeps running.
func (t *Tx) finishPromoting(s *step, outcome string) (FinishResult, error) {
	if err := t.finishTurnRequest(s.chat.ID, outcome, nil); err != nil {
		return FinishResult{}, err
	}
	n, err := t.tx.QueueCount(t.ctx, s.chat.ID)
	if err != nil {
		return FinishResult{}, err
	}
	var res FinishResult
	p := store.ChatPatch{Status: store.Some(store.ChatStatusWaiting), CompactionRequestedAt: store.Some[*time.Time](nil)}
	if n > 0 {
		m, err := t.promoteHead(s.chat.ID)
		if err != nil {
			return res, err
		}
		res.Promoted = []store.Message{m}
		p = running()
	}
	if err := t.update(s.chat.ID, p); err != nil {
		return res, err
	}
	res.State, err = s.end()
	return res, err
}

// RecordGenerationAttempt counts one more provider call for this history.
func (t *Tx) RecordGenerationAttempt(chatID uuid.UUID) (store.Chat, error) {
	if _, err := t.begin(chatID, RecordGenerationAttempt); err != nil {
		return store.Chat{}, err
	}
	return t.tx.ChatIncrementGenerationAttempt(t.ctx, chatID)
}

// RecordRetryState stores the retry payload clients see while backing off.
func (t *Tx) RecordRetryState(chatID uuid.UUID, retry sdk.ChatRetry) (store.Chat, error) {
	if _, err := t.begin(chatID, RecordRetryState); err != nil {
		return store.Chat{}, err
	}
	raw, err := json.Marshal(retry)
	if err != nil {
		return store.Chat{}, err
	}
	return t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{RetryState: store.Some(json.RawMessage(raw))})
}

// FinishTurn completes the turn: waiting with an empty queue, otherwise the
// queue head enters history and the chat keeps running.
func (t *Tx) FinishTurn(chatID uuid.UUID) (FinishResult, error) {
	s, err := t.begin(chatID, FinishTurn)
	if err != nil {
		return FinishResult{}, err
	}
	return t.finishPromoting(s, OutcomeCompleted)
}

// FinishError parks the chat in error with last_error = e.
func (t *Tx) FinishError(chatID uuid.UUID, e sdk.ChatError) (State, error) {
	s, err := t.begin(chatID, FinishError)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if err := t.finishTurnRequest(chatID, OutcomeError, &e); err != nil {
		return "", err
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                store.Some(store.ChatStatusError),
		LastError:             store.Some(json.RawMessage(raw)),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return "", err
	}
	return s.end()
}
