package chatstate

import (
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// InterruptResult is what Interrupt did.
type InterruptResult struct {
	// Promoted lists messages that entered history when the interruption
	// was finished in the same transaction.
	Promoted []store.Message
	State    State
}

// Interrupt requests cancellation of active generation or closes a pending
// action, preserving the queue. On an unowned chat nothing is generating,
// so the same transaction finishes the interruption; an unowned chat that
// is already interrupting is finished the same way.
func (t *Tx) Interrupt(chatID uuid.UUID) (InterruptResult, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return InterruptResult{}, err
	}
	if isInterrupting(st) {
		if c.WorkerID.Valid {
			return InterruptResult{}, &TransitionError{Transition: Interrupt, From: st,
				Reason: "its worker is already finishing the interruption"}
		}
		if err := t.answerOutstanding(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		fin, err := t.FinishInterruption(chatID, nil)
		return InterruptResult{Promoted: fin.Promoted, State: fin.State}, err
	}
	s, err := t.begin(chatID, Interrupt)
	if err != nil {
		return InterruptResult{}, err
	}
	if isAction(s.from) {
		if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		if err := t.update(chatID, running()); err != nil {
			return InterruptResult{}, err
		}
	} else if err := t.update(chatID, store.ChatPatch{
		Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return InterruptResult{}, err
	}
	to, err := s.end()
	if err != nil {
		return InterruptResult{}, err
	}
	if isInterrupting(to) && !s.chat.WorkerID.Valid {
		if err := t.answerOutstanding(chatID, reasonInterrupted); err != nil {
			return InterruptResult{}, err
		}
		fin, err := t.FinishInterruption(chatID, nil)
		return InterruptResult{Promoted: fin.Promoted, State: fin.State}, err
	}
	return InterruptResult{State: to}, nil
}

// FinishInterruption commits the interrupted partial step, if any, and
// lands in waiting, or promotes the queue head and runs it.
func (t *Tx) FinishInterruption(chatID uuid.UUID, partial []store.MessageInsertParams) (FinishResult, error) {
	s, err := t.begin(chatID, FinishInterruption)
	if err != nil {
		return FinishResult{}, err
	}
	if _, err := t.insertSuffix(chatID, partial); err != nil {
		return FinishResult{}, err
	}
	return t.finishPromoting(s, OutcomeInterrupted)
}
