package sdk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Webhook events.
const (
	EventTurnCompleted         = "turn.completed"
	EventTurnFailed            = "turn.failed"
	EventChatRequiresAction    = "chat.requires_action"
	EventToolApprovalRequested = "tool.approval_requested"
)

// Headers of a webhook delivery.
const (
	HeaderWebhookEvent     = "Chatd-Event"
	HeaderWebhookDelivery  = "Chatd-Delivery"
	HeaderWebhookSignature = "Chatd-Signature"
)

// CreateWebhookRequest is the body of POST /webhooks.
type CreateWebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret signs the deliveries (Chatd-Signature); the server makes one
	// up when it is empty and returns it once, in the create answer.
	Secret string `json:"secret,omitempty"`
	// ChatID limits the webhook to one chat.
	ChatID *uuid.UUID `json:"chat_id,omitempty"`
	// Global (admins only) hears every user's chats.
	Global bool `json:"global,omitempty"`
}

// Webhook is a registered webhook. Secret is only in the create answer.
type Webhook struct {
	ID        uuid.UUID  `json:"id"`
	URL       string     `json:"url"`
	Events    []string   `json:"events"`
	ChatID    *uuid.UUID `json:"chat_id"`
	OwnerID   *uuid.UUID `json:"owner_id"` // null: global
	Secret    string     `json:"secret,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// WebhookDelivery is one event's delivery to a webhook.
type WebhookDelivery struct {
	ID            uuid.UUID  `json:"id"`
	Event         string     `json:"event"`
	ChatID        uuid.UUID  `json:"chat_id"`
	Status        string     `json:"status"` // pending, delivered, failed
	Attempts      int64      `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastStatus    int64      `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	// Payload is the body POSTed (the same on every attempt).
	Payload *WebhookEvent `json:"payload"`
}

// WebhookEvent is the JSON body of a delivery.
type WebhookEvent struct {
	// ID is the delivery's id, also in Chatd-Delivery: the same on every
	// retry, for the receiver's deduplication.
	ID         uuid.UUID `json:"id"`
	Event      string    `json:"event"`
	ChatID     uuid.UUID `json:"chat_id"`
	OwnerID    uuid.UUID `json:"owner_id"`
	OccurredAt time.Time `json:"occurred_at"`
	// Status is the chat's status after the event.
	Status string `json:"status"`
	// Error is the turn's error (turn.failed).
	Error *ChatError `json:"error,omitempty"`
	// ToolApprovals are the calls waiting for a person (tool.approval_requested).
	ToolApprovals []ToolApproval `json:"tool_approvals,omitempty"`
}

// CreateWebhook registers a webhook (POST /webhooks); the answer carries
// its secret, once.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (Webhook, error) {
	var out Webhook
	return out, c.Do(ctx, http.MethodPost, "/webhooks", req, &out)
}

// Webhooks lists the caller's webhooks, an admin's all (GET /webhooks).
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	var out []Webhook
	return out, c.Do(ctx, http.MethodGet, "/webhooks", nil, &out)
}

// DeleteWebhook removes a webhook (DELETE /webhooks/{id}).
func (c *Client) DeleteWebhook(ctx context.Context, id uuid.UUID) error {
	return c.Do(ctx, http.MethodDelete, "/webhooks/"+id.String(), nil, nil)
}

// WebhookDeliveries lists a webhook's deliveries, newest first (GET /webhooks/{id}/deliveries).
func (c *Client) WebhookDeliveries(ctx context.Context, id uuid.UUID) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	return out, c.Do(ctx, http.MethodGet, "/webhooks/"+id.String()+"/deliveries", nil, &out)
}

// VerifyWebhookSignature reports whether header (a delivery's
// Chatd-Signature) is the signature of body with secret, in constant time:
// what a receiver checks before it trusts a delivery.
func VerifyWebhookSignature(secret string, body []byte, header string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(header))
}
