package chatstate

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// emitEvent writes a delivery of event for every webhook of the chat's
// owner (or global) that listens to it, in the bundle of the transition
// that caused it: the outbox. A rollback loses the event with the
// transition; a commit keeps both, whatever happens to the process next.
func (t *Tx) emitEvent(c store.Chat, event string, lastErr *sdk.ChatError) error {
	hooks, err := t.tx.WebhookListForChat(t.ctx, c.OwnerID, c.ID)
	if err != nil {
		return fmt.Errorf("webhooks of chat %s: %w", c.ID, err)
	}
	for _, w := range hooks {
		if !slices.Contains(w.Events, event) {
			continue
		}
		ev := sdk.WebhookEvent{ID: uuid.New(), Event: event, ChatID: c.ID, OwnerID: c.OwnerID, OccurredAt: t.now,
			Status: string(c.Status), Error: lastErr}
		if event == sdk.EventToolApprovalRequested {
			if ev.ToolApprovals, err = PendingApprovals(c); err != nil {
				return err
			}
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", event, err)
		}
		if _, err := t.tx.WebhookDeliveryInsert(t.ctx, store.WebhookDelivery{
			ID: ev.ID, WebhookID: w.ID, ChatID: c.ID, Event: event, Payload: payload, NextAttemptAt: t.now, CreatedAt: t.now,
		}); err != nil {
			return err
		}
		t.outbox = true
	}
	return nil
}

// emitAfter is emitEvent for the chat a transition left in res.
func (t *Tx) emitAfter(res Result, err error, event string, lastErr *sdk.ChatError) (Result, error) {
	if err != nil {
		return res, err
	}
	return res, t.emitEvent(res.Chat, event, lastErr)
}
