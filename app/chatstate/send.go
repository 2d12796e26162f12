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

// SendResult is what SendMessage did.
type SendResult struct {
	// Message is the user message inserted into history, when m was not
	// left queued (including when it was queued and promoted at once).
	Message *store.Message
	// Queued is m's queue row while it stays queued.
	Queued *store.QueuedMessage
	// Promoted lists every message that entered history, in order.
	Promoted []store.Message
	State    State
}

// SendMessage inserts m when the chat is idle or queues it when busy; with
// BusyInterrupt it also interrupts active work or cancels a pending action.
func (t *Tx) SendMessage(chatID uuid.UUID, in UserInput, busy BusyBehavior) (SendResult, error) {
	tr := SendMessageQueue
	switch busy {
	case BusyQueue, "":
	case BusyInterrupt:
		tr = SendMessageInterrupt
	default:
		return SendResult{}, invalid("busy_behavior", "must be %q or %q, got %q", BusyQueue, BusyInterrupt, busy)
	}
	content, err := in.encode("content")
	if err != nil {
		return SendResult{}, err
	}
	s, err := t.begin(chatID, tr)
	if err != nil {
		return SendResult{}, err
	}
	var res SendResult
	switch s.from {
	case StateW, StateE0:
		m, err := t.insertUser(chatID, content, in, nil)
		if err != nil {
			return res, err
		}
		res.Message, res.Promoted = &m, []store.Message{m}
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateE1:
		// Append to the tail, promote the head, clear the error. Promoting
		// first keeps the queue length, so a full queue still accepts m.
		m, err := t.promoteHead(chatID)
		if err != nil {
			return res, err
		}
		res.Promoted = []store.Message{m}
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateR0, StateR1, StateI0, StateI1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if tr == SendMessageInterrupt && !isInterrupting(s.from) {
			if err := t.update(chatID, store.ChatPatch{
				Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
			}); err != nil {
				return res, err
			}
		}
	case StateA0, StateA1:
		q, err := t.enqueue(chatID, content, in)
		if err != nil {
			return res, err
		}
		res.Queued = &q
		if tr == SendMessageInterrupt {
			if err := t.leaveAction(chatID, reasonInterrupted); err != nil {
				return res, err
			}
			if err := t.update(chatID, running()); err != nil {
				return res, err
			}
		}
	}
	if res.State, err = s.end(); err != nil {
		return res, err
	}
	// Nothing is generating on an unowned chat, so no runner would finish
	// the interruption without first taking a capacity slot: finish it now.
	if tr == SendMessageInterrupt && isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return res, err
		}
		res.Promoted = append(res.Promoted, fin.Promoted...)
		res.State = fin.State
	}
	if res.Queued != nil {
		for i := range res.Promoted {
			if p := res.Promoted[i].QueuedMessageID; p != nil && *p == res.Queued.ID {
				res.Message, res.Queued = &res.Promoted[i], nil
				break
			}
		}
	}
	return res, nil
}

// EditResult is what EditMessage did.
type EditResult struct {
	Message    store.Message
	DeletedIDs []int64
	State      State
}

// EditMessage replaces user message k: it clears the queue, drops active
// work and any pending action, soft-deletes the history suffix from k on,
// and inserts the replacement turn.
func (t *Tx) EditMessage(chatID uuid.UUID, messageID int64, in UserInput) (EditResult, error) {
	content, err := in.encode("content")
	if err != nil {
		return EditResult{}, err
	}
	s, err := t.begin(chatID, EditMessage)
	if err != nil {
		return EditResult{}, err
	}
	target, err := t.tx.MessageGet(t.ctx, chatID, messageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && target.Deleted) {
		return EditResult{}, &notFoundError{what: fmt.Sprintf("message %d", messageID)}
	}
	if err != nil {
		return EditResult{}, err
	}
	if target.Role != store.RoleUser || target.Visibility == store.VisibilityModel {
		return EditResult{}, invalid("message", "only user messages can be edited (message %d is %s)", messageID, target.Role)
	}
	if err := t.settleRequests(chatID, messageID); err != nil {
		return EditResult{}, err
	}
	if _, err := t.tx.QueueDeleteAll(t.ctx, chatID); err != nil {
		return EditResult{}, err
	}
	deleted, err := t.tx.MessageSoftDeleteFrom(t.ctx, chatID, messageID)
	if err != nil {
		return EditResult{}, err
	}
	m, err := t.insertUser(chatID, content, in, nil)
	if err != nil {
		return EditResult{}, err
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return EditResult{}, err
	}
	to, err := s.end()
	return EditResult{Message: m, DeletedIDs: deleted, State: to}, err
}

// DeleteQueuedMessage removes one queued message.
func (t *Tx) DeleteQueuedMessage(chatID uuid.UUID, qid int64) (State, error) {
	s, err := t.begin(chatID, DeleteQueuedMessage)
	if err != nil {
		return "", err
	}
	q, err := t.tx.QueueGet(t.ctx, chatID, qid)
	if errors.Is(err, store.ErrNotFound) {
		return "", &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err != nil {
		return "", fmt.Errorf("queued message %d: %w", qid, err)
	}
	n, err := t.tx.QueueDelete(t.ctx, chatID, qid)
	if err != nil {
		return "", err
	}
	if n != 1 {
		return "", &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	}
	if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
		return "", err
	}
	return s.end()
}

// PromoteResult is what PromoteQueuedMessage did.
type PromoteResult struct {
	// Message is the promoted message when it entered history at once.
	Message *store.Message
	State   State
}

// PromoteQueuedMessage makes qid the next message to process: from E1 and
// A1 it enters history at once; from R1 and I1 it becomes the queue head
// and the chat interrupts, so FinishInterruption promotes it.
func (t *Tx) PromoteQueuedMessage(chatID uuid.UUID, qid int64) (PromoteResult, error) {
	s, err := t.begin(chatID, PromoteQueuedMessage)
	if err != nil {
		return PromoteResult{}, err
	}
	if _, err := t.tx.QueueGet(t.ctx, chatID, qid); errors.Is(err, store.ErrNotFound) {
		return PromoteResult{}, &notFoundError{what: fmt.Sprintf("queued message %d", qid)}
	} else if err != nil {
		return PromoteResult{}, fmt.Errorf("queued message %d: %w", qid, err)
	}
	if err := t.moveToHead(chatID, qid); err != nil {
		return PromoteResult{}, err
	}
	var res PromoteResult
	switch s.from {
	case StateE1, StateA1:
		if s.from == StateA1 {
			if err := t.leaveAction(chatID, reasonNewMessage); err != nil {
				return res, err
			}
		}
		m, err := t.promoteHead(chatID)
		if err != nil {
			return res, err
		}
		res.Message = &m
		if err := t.update(chatID, running()); err != nil {
			return res, err
		}
	case StateR1:
		if err := t.update(chatID, store.ChatPatch{
			Status: store.Some(store.ChatStatusInterrupting), CompactionRequestedAt: store.Some[*time.Time](nil),
		}); err != nil {
			return res, err
		}
	case StateI1:
		// Already interrupting: the new head is promoted when it finishes.
	}
	if res.State, err = s.end(); err != nil {
		return res, err
	}
	if isInterrupting(res.State) && !s.chat.WorkerID.Valid {
		fin, err := t.FinishInterruption(chatID, nil)
		if err != nil {
			return res, err
		}
		if len(fin.Promoted) > 0 {
			res.Message = &fin.Promoted[0]
		}
		res.State = fin.State
	}
	return res, nil
}
