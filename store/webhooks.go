package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// WebhookReader reads completion webhooks and their deliveries. It is part
// of Reader.
type WebhookReader interface {
	// WebhookGet reads a webhook.
	WebhookGet(ctx context.Context, id uuid.UUID) (Webhook, error)

	// WebhookList lists webhooks oldest first (created_at, id): one
	// owner's when p.OwnerID is set, else every one (global ones included).
	WebhookList(ctx context.Context, p WebhookListParams) ([]Webhook, error)

	// WebhookCountByOwner counts the webhooks a user owns (the per-user cap).
	WebhookCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// WebhookListForChat lists the webhooks that hear of a chat's events:
	// its owner's and the global ones (no owner), each for every chat or
	// for this one, oldest first. Events are not filtered.
	WebhookListForChat(ctx context.Context, ownerID, chatID uuid.UUID) ([]Webhook, error)

	// WebhookDeliveryList lists a webhook's deliveries, newest first.
	WebhookDeliveryList(ctx context.Context, webhookID uuid.UUID, limit int) ([]WebhookDelivery, error)

	// WebhookDeliveryListDue lists, in seq order, at most limit pending
	// deliveries whose next attempt is at or before now and that are the
	// oldest pending one of their (webhook, chat): order per chat holds.
	WebhookDeliveryListDue(ctx context.Context, now time.Time, limit int) ([]WebhookDelivery, error)

	// WebhookDeliveryNextDue reads the earliest next attempt of a pending
	// delivery; false when there is none.
	WebhookDeliveryNextDue(ctx context.Context) (time.Time, bool, error)
}

// WebhookTx writes webhooks and deliveries. It is part of Tx: app/webhooks
// writes the definitions and delivery attempts; app/chatstate inserts
// deliveries in the bundle of their event (the outbox).
type WebhookTx interface {
	// WebhookInsert creates a webhook.
	WebhookInsert(ctx context.Context, w Webhook) (Webhook, error)

	// WebhookDelete removes a webhook and its deliveries and reports
	// whether it existed.
	WebhookDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// WebhookDeliveryInsert appends a pending delivery; the database
	// assigns Seq.
	WebhookDeliveryInsert(ctx context.Context, d WebhookDelivery) (WebhookDelivery, error)

	// WebhookDeliveryClaim takes a pending delivery for one attempt: when
	// it is still pending with next_attempt_at = due, it counts the
	// attempt and moves next_attempt_at to until (when a crashed attempt
	// may be retried), and reports true; otherwise (another replica took
	// it) false and nothing changes.
	WebhookDeliveryClaim(ctx context.Context, seq int64, due, until time.Time) (bool, error)

	// WebhookDeliveryUpdate writes the fields set in p and returns the row.
	WebhookDeliveryUpdate(ctx context.Context, seq int64, p WebhookDeliveryPatch) (WebhookDelivery, error)
}

// Webhook events.
const (
	EventTurnCompleted         = "turn.completed"
	EventTurnFailed            = "turn.failed"
	EventChatRequiresAction    = "chat.requires_action"
	EventToolApprovalRequested = "tool.approval_requested"
)

// Webhook delivery statuses.
const (
	WebhookDeliveryPending   = "pending"
	WebhookDeliveryDelivered = "delivered"
	WebhookDeliveryFailed    = "failed"
)

// AllWebhookEvents lists every event a webhook may subscribe to.
var AllWebhookEvents = []string{EventTurnCompleted, EventTurnFailed, EventChatRequiresAction, EventToolApprovalRequested}

// Webhook is one row of webhooks.
type Webhook struct {
	ID        uuid.UUID
	OwnerID   uuid.NullUUID // unset: a global webhook (an admin's)
	ChatID    uuid.NullUUID // unset: every chat it may see
	URL       string
	Events    []string
	Secret    string
	CreatedBy uuid.UUID
	CreatedAt time.Time
}

// WebhookListParams select webhooks.
type WebhookListParams struct {
	OwnerID uuid.NullUUID
	Limit   int // see ListLimit
}

// WebhookDelivery is one row of webhook_deliveries.
type WebhookDelivery struct {
	Seq           int64
	ID            uuid.UUID // Chatd-Delivery: stable across retries
	WebhookID     uuid.UUID
	ChatID        uuid.UUID
	Event         string
	Payload       json.RawMessage
	Status        string
	Attempts      int64
	NextAttemptAt time.Time
	LastStatus    int64
	LastError     string
	CreatedAt     time.Time
	DeliveredAt   *time.Time
}

// WebhookDeliveryPatch names the delivery columns an update writes.
type WebhookDeliveryPatch struct {
	Status        Opt[string]
	NextAttemptAt Opt[time.Time]
	LastStatus    Opt[int64]
	LastError     Opt[string]
	DeliveredAt   Opt[*time.Time]
}

// Assignments lists the webhook_deliveries columns p writes, in a fixed order.
func (p WebhookDeliveryPatch) Assignments() []Assignment {
	var as []Assignment
	as = set(as, "status", p.Status)
	as = set(as, "next_attempt_at", p.NextAttemptAt)
	as = set(as, "last_status", p.LastStatus)
	as = set(as, "last_error", p.LastError)
	as = set(as, "delivered_at", p.DeliveredAt)
	return as
}
