package chatstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Turn outcomes recorded on a durable request when its turn ends.
const (
	OutcomeCompleted   = "completed"   // the turn finished normally
	OutcomeInterrupted = "interrupted" // the user stopped it; partial output kept
	OutcomeError       = "error"       // it finished in error (see last_error)
	OutcomeSuperseded  = "superseded"  // an edit removed its message
	OutcomeCancelled   = "cancelled"   // removed from the queue before it ran
)

// Outcome is what a completed request's claim records, once durable.
type Outcome struct {
	Status     string         `json:"status"`
	MessageIDs []int64        `json:"message_ids"`
	LastError  *sdk.ChatError `json:"last_error,omitempty"`
}

// finishRequest records the outcome of a request that is still admitted.
// It runs inside the transition that ends the request's turn, so the
// outcome is written exactly when the result becomes durable.
func (t *Tx) finishRequest(requestID uuid.NullUUID, o Outcome) error {
	if !requestID.Valid {
		return nil
	}
	inv, err := t.tx.InvocationGet(t.ctx, requestID.UUID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read request %s: %w", requestID.UUID, err)
	}
	if inv.State != store.InvocationAdmitted {
		return nil
	}
	if o.MessageIDs == nil {
		o.MessageIDs = []int64{}
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outcome of request %s: %w", requestID.UUID, err)
	}
	now := t.now
	_, err = t.changeRequest(requestID.UUID, inv.State, store.InvocationCompleted, store.InvocationPatch{
		Outcome: store.Some(json.RawMessage(raw)), CompletedAt: store.Some(&now),
	})
	return err
}

// finishTurnRequest records the outcome of the current turn's request: the
// request of the last user message in active history.
func (t *Tx) finishTurnRequest(chatID uuid.UUID, status string, lastErr *sdk.ChatError) error {
	ms, err := t.turnTail(chatID)
	if err != nil || len(ms) == 0 || ms[0].Role != store.RoleUser || !ms[0].RequestID.Valid {
		return err
	}
	ids := []int64{}
	for _, m := range ms {
		if m.Visibility != store.VisibilityModel {
			ids = append(ids, m.ID)
		}
	}
	return t.finishRequest(ms[0].RequestID, Outcome{Status: status, MessageIDs: ids, LastError: lastErr})
}

// turnTail is the active history from the current turn's prompt on. It
// is tail, except that lifecycle hook context committed inside the turn
// (post_tool_use, stop: authorless user messages without a request) does
// not start a turn: the walk goes back to the user message a person (or a
// request) wrote, and no further than a compaction's boundary.
func (t *Tx) turnTail(chatID uuid.UUID) ([]store.Message, error) {
	var out []store.Message
	before := int64(0)
	for page := firstTailPage; ; page = min(page*2, maxTailPage) {
		ms, err := t.tx.MessageList(t.ctx, chatID, store.MessageListParams{BeforeID: before, Descending: true, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("list messages of chat %s: %w", chatID, err)
		}
		for _, m := range ms {
			out = append(out, m)
			if m.Role == store.RoleUser && (m.CreatedBy.Valid || m.RequestID.Valid || m.Compressed) {
				slices.Reverse(out)
				return out, nil
			}
		}
		if len(ms) < page {
			// No prompt a person wrote: the turn starts at its last user message.
			slices.Reverse(out)
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].Role == store.RoleUser {
					return out[i:], nil
				}
			}
			return out, nil
		}
		before = ms[len(ms)-1].ID
	}
}

// requestPromoted moves a request's claim from its queue row to its message.
func (t *Tx) requestPromoted(m store.Message) error {
	if !m.RequestID.Valid {
		return nil
	}
	id := m.ID
	_, err := t.tx.InvocationUpdate(t.ctx, m.RequestID.UUID, store.InvocationPatch{
		MessageID: store.Some(&id), QueuedMessageID: store.Some[*int64](nil), UpdatedAt: t.now,
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// settleRequests records the outcome of requests an edit at messageID
// removes: queued ones are cancelled, those whose message is in the
// truncated suffix are superseded.
func (t *Tx) settleRequests(chatID uuid.UUID, messageID int64) error {
	queue, err := t.tx.QueueList(t.ctx, chatID)
	if err != nil {
		return err
	}
	for _, q := range queue {
		if err := t.finishRequest(q.RequestID, Outcome{Status: OutcomeCancelled}); err != nil {
			return err
		}
	}
	suffix, err := t.tx.MessageList(t.ctx, chatID, store.MessageListParams{AfterID: messageID - 1})
	if err != nil {
		return err
	}
	for _, m := range suffix {
		if m.Role == store.RoleUser && m.RequestID.Valid {
			if err := t.finishRequest(m.RequestID, Outcome{Status: OutcomeSuperseded, MessageIDs: []int64{m.ID}}); err != nil {
				return err
			}
		}
	}
	return nil
}
