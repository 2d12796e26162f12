package chatstate

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// BusyBehavior says what SendMessage does to a busy chat.
type BusyBehavior string

// Busy behaviours.
const (
	BusyQueue     BusyBehavior = "queue"
	BusyInterrupt BusyBehavior = "interrupt"
)

// SendMessage inserts m when the chat is idle or queues it when busy; with
// BusyInterrupt it also interrupts active work or cancels a pending action.
// The result has m in Message once it is in history (also when it was
// queued and promoted at once), otherwise its queue row in Queued.
func (t *Tx) SendMessage(chatID uuid.UUID, in UserInput, busy BusyBehavior) (Result, error) {
	tr := SendMessageQueue
	switch busy {
	case BusyQueue, "":
	case BusyInterrupt:
		tr = SendMessageInterrupt
	default:
		return Result{}, invalid("busy_behavior", "must be %q or %q, got %q", BusyQueue, BusyInterrupt, busy)
	}
	content, err := in.encode("content")
	if err != nil {
		return Result{}, err
	}
	s, err := t.begin(chatID, tr)
	if err != nil {
		return Result{}, err
	}
	var (
		sent   *store.Message
		queued *store.QueuedMessage
	)
	switch s.from {
	case StateW, StateE0:
		m, err := t.insertUser(chatID, content, in, nil)
		if err != nil {
			return Result{}, err
		}
		sent = &m
		if err := t.update(chatID, running()); err != nil {
			return Result{}, err
		}
	case StateE1:
		// Append to the tail, promote the head, clear the error. Promoting
		// first keeps the queue length, so a full queue still accepts m.
		if _, err := t.promoteHead(chatID); err != nil {
			return Result{}, err
		}
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return Result{}, err
		}
		queued = &q
		if err := t.update(chatID, running()); err != nil {
			return Result{}, err
		}
	case StateR0, StateR1, StateI0, StateI1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return Result{}, err
		}
		queued = &q
		if tr == SendMessageInterrupt && !isInterrupting(s.from) {
			if err := t.update(chatID, store.ChatPatch{
				Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
			}); err != nil {
				return Result{}, err
			}
		}
	case StateA0, StateA1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return Result{}, err
		}
		queued = &q
		if tr == SendMessageInterrupt {
			if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
				return Result{}, err
			}
			if err := t.update(chatID, running()); err != nil {
				return Result{}, err
			}
		}
	}
	res, err := s.end()
	if err != nil {
		return Result{}, err
	}
	// Nothing is generating on an unowned chat, so no runner would finish
	// the interruption without first taking a capacity slot: finish it now.
	if tr == SendMessageInterrupt && isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return Result{}, err
		}
		res = s.then(res, fin)
	}
	res.Message, res.Queued = sent, queued
	if queued != nil {
		for i := range res.Promoted {
			if p := res.Promoted[i].QueuedMessageID; p != nil && *p == queued.ID {
				res.Message, res.Queued = &res.Promoted[i], nil
				break
			}
		}
	}
	return res, nil
}

// EditMessage adds a new version of user message k: it clears the queue,
// drops active work and any pending action, hides the active branch from k
// on (a branch switch shows it again, see versions.go), and inserts the
// replacement turn, k's sibling. The result has the replacement in Message
// and the messages that left the active branch in DeletedIDs.
func (t *Tx) EditMessage(chatID uuid.UUID, messageID int64, in UserInput) (Result, error) {
	content, err := in.encode("content")
	if err != nil {
		return Result{}, err
	}
	s, err := t.begin(chatID, EditMessage)
	if err != nil {
		return Result{}, err
	}
	target, err := t.tx.MessageGet(t.ctx, chatID, messageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && target.Deleted) {
		return Result{}, &notFoundError{what: fmt.Sprintf("message %d", messageID)}
	}
	if err != nil {
		return Result{}, err
	}
	if target.Role != store.RoleUser || target.Visibility == store.VisibilityModel {
		return Result{}, invalid("message", "only user messages can be edited (message %d is %s)", messageID, target.Role)
	}
	deleted, err := t.hideFrom(chatID, messageID)
	if err != nil {
		return Result{}, err
	}
	m, err := t.insertUser(chatID, content, in, nil)
	if err != nil {
		return Result{}, err
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	if err != nil {
		return Result{}, err
	}
	res.Message, res.DeletedIDs = &m, deleted
	return res, nil
}

// DeleteQueuedMessage removes one queued message.
func (t *Tx) DeleteQueuedMessage(chatID uuid.UUID, qid int64) (Result, error) {
	s, err := t.begin(chatID, DeleteQueuedMessage)
	if err != nil {
		return Result{}, err
	}
	q, err := t.tx.QueueGet(t.ctx, chatID, qid)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err != nil {
		return Result{}, fmt.Errorf("queued message %d: %w", qid, err)
	}
	n, err := t.tx.QueueDelete(t.ctx, chatID, qid)
	if err != nil {
		return Result{}, err
	}
	if n != 1 {
		return Result{}, &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// PromoteQueuedMessage makes qid the next message to process: from E1 and
// A1 it enters history at once; from R1 and I1 it becomes the queue head
// and the chat interrupts, so FinishInterruption promotes it. The result
// has the message in Message when it entered history at once.
func (t *Tx) PromoteQueuedMessage(chatID uuid.UUID, qid int64) (Result, error) {
	s, err := t.begin(chatID, PromoteQueuedMessage)
	if err != nil {
		return Result{}, err
	}
	if _, err := t.tx.QueueGet(t.ctx, chatID, qid); errors.Is(err, store.ErrNotFound) {
		return Result{}, &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	} else if err != nil {
		return Result{}, fmt.Errorf("queued message %d: %w", qid, err)
	}
	if err := t.moveToHead(chatID, qid); err != nil {
		return Result{}, err
	}
	switch s.from {
	case StateE1, StateA1:
		if s.from == StateA1 {
			if err := t.leaveAction(chatID, reasonNewMessage); err != nil {
				return Result{}, err
			}
		}
		if _, err := t.promoteHead(chatID); err != nil {
			return Result{}, err
		}
		if err := t.update(chatID, running()); err != nil {
			return Result{}, err
		}
	case StateR1:
		if err := t.update(chatID, store.ChatPatch{
			Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
		}); err != nil {
			return Result{}, err
		}
	case StateI1:
		// Already interrupting: the new head is promoted when it finishes.
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
	if len(res.Promoted) > 0 {
		res.Message = &res.Promoted[0]
	}
	return res, nil
}
