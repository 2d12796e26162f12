package chatstate

import (
	"encoding/json"
	"fmt"
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
	// Charge is the usage of the provider call that produced the step
	// (nil: none); it is recorded with the step, once.
	Charge *Charge
}

// CommitStep inserts one step's messages while remaining running; they are
// the result's Messages.
func (t *Tx) CommitStep(chatID uuid.UUID, st Step) (Result, error) {
	s, err := t.begin(chatID, CommitStep)
	if err != nil {
		return Result{}, err
	}
	inserted, err := t.insertSuffix(chatID, st.Messages)
	if err != nil {
		return Result{}, err
	}
	if st.Charge != nil {
		if err := t.recordCharge(s.chat, stepUsageKey(s.chat), *st.Charge, inserted); err != nil {
			return Result{}, err
		}
	}
	if st.Compaction {
		if err := t.update(chatID, store.ChatPatch{CompactionRequestedAt: store.Some[*time.Time](nil)}); err != nil {
			return Result{}, err
		}
	} else if err := t.update(chatID, store.ChatPatch{}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// finishPromoting lands in waiting with an empty queue, or promotes the
// queue head and keeps running.
func (t *Tx) finishPromoting(s *step, outcome string) (Result, error) {
	if err := t.finishTurnRequest(s.id, outcome, nil); err != nil {
		return Result{}, err
	}
	n, err := t.tx.QueueCount(t.ctx, s.id)
	if err != nil {
		return Result{}, fmt.Errorf("count queue of chat %s: %w", s.id, err)
	}
	p := store.ChatPatch{Status: store.Some(store.ChatStatusWaiting), CompactionRequestedAt: store.Some[*time.Time](nil)}
	if n > 0 {
		if _, err := t.promoteHead(s.id); err != nil {
			return Result{}, err
		}
		p = running()
	}
	if err := t.update(s.id, p); err != nil {
		return Result{}, err
	}
	return s.end()
}

// RecordGenerationAttempt counts one more provider call for this history.
func (t *Tx) RecordGenerationAttempt(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, RecordGenerationAttempt)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatIncrementGenerationAttempt(t.ctx, chatID); err != nil {
		return Result{}, fmt.Errorf("count generation attempt of chat %s: %w", chatID, err)
	}
	return s.end()
}

// RecordRetryState stores the retry payload clients see while backing off.
func (t *Tx) RecordRetryState(chatID uuid.UUID, retry sdk.ChatRetry) (Result, error) {
	s, err := t.begin(chatID, RecordRetryState)
	if err != nil {
		return Result{}, err
	}
	raw, err := json.Marshal(retry)
	if err != nil {
		return Result{}, fmt.Errorf("encode retry state: %w", err)
	}
	if _, err := t.tx.ChatUpdate(t.ctx, chatID, store.ChatPatch{RetryState: store.Some(json.RawMessage(raw))}); err != nil {
		return Result{}, fmt.Errorf("record retry state of chat %s: %w", chatID, err)
	}
	return s.end()
}

// FinishTurn completes the turn: waiting with an empty queue, otherwise the
// queue head enters history and the chat keeps running. A tool call the
// turn leaves unanswered is answered with a cancellation first.
func (t *Tx) FinishTurn(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, FinishTurn)
	if err != nil {
		return Result{}, err
	}
	if err := t.answerOutstanding(chatID, reasonTurnEnded); err != nil {
		return Result{}, err
	}
	res, err := t.finishPromoting(s, OutcomeCompleted)
	return t.emitAfter(res, err, sdk.EventTurnCompleted, nil)
}

// FinishError parks the chat in error with last_error = e. Tool calls the
// failed turn leaves unanswered are answered with cancellations first, so
// nothing from error (a compaction, say) runs them later.
func (t *Tx) FinishError(chatID uuid.UUID, e sdk.ChatError) (Result, error) {
	s, err := t.begin(chatID, FinishError)
	if err != nil {
		return Result{}, err
	}
	if err := t.answerOutstanding(chatID, reasonTurnFailed); err != nil {
		return Result{}, err
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return Result{}, err
	}
	if err := t.finishTurnRequest(chatID, OutcomeError, &e); err != nil {
		return Result{}, err
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                store.Some(store.ChatStatusError),
		LastError:             store.Some(json.RawMessage(raw)),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	return t.emitAfter(res, err, sdk.EventTurnFailed, &e)
}
