package chatstate

import (
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Interrupt requests cancellation of active generation or closes a pending
// action, preserving the queue. On an unowned chat nothing is generating,
// so the same transaction applies FinishInterruption, which answers the
// outstanding tool calls; an unowned chat that is already interrupting
// gets FinishInterruption alone (spec: POST /interrupt). An owned
// interrupting chat is refused: its runner finishes the interruption.
func (t *Tx) Interrupt(chatID uuid.UUID) (Result, error) {
	c, st, err := t.LockState(chatID)
	if err != nil {
		return Result{}, err
	}
	if isInterrupting(st) {
		if c.WorkerID.Valid {
			return Result{}, &TransitionError{Transition: Interrupt, From: st,
				Reason: "its worker is already finishing the interruption"}
		}
		return t.FinishInterruption(chatID, nil)
	}
	s, err := t.begin(chatID, Interrupt)
	if err != nil {
		return Result{}, err
	}
	if isAction(s.from) {
		if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
			return Result{}, err
		}
		if err := t.update(chatID, running()); err != nil {
			return Result{}, err
		}
	} else if err := t.update(chatID, store.ChatPatch{
		Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	if err != nil {
		return Result{}, err
	}
	if isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return Result{}, err
		}
		res = s.then(res, fin)
	}
	return res, nil
}

// FinishInterruption commits the interrupted partial step, if any, answers
// every tool call the interrupted turn leaves without a result (calls that
// were running, calls of the partial step; see answerOutstanding), and
// lands in waiting, or promotes the queue head and runs it. So a chat that
// stops after an interruption has no outstanding call: nothing a later
// turn or compaction could run again.
func (t *Tx) FinishInterruption(chatID uuid.UUID, partial []store.MessageInsertParams) (Result, error) {
	s, err := t.begin(chatID, FinishInterruption)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.insertSuffix(chatID, partial); err != nil {
		return Result{}, err
	}
	if err := t.answerOutstanding(chatID, reasonInterrupted); err != nil {
		return Result{}, err
	}
	return t.finishPromoting(s, OutcomeInterrupted)
}
