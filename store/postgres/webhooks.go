package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanWebhook(row pgx.Row) (store.Webhook, error) {
	var (
		w      store.Webhook
		events []byte
	)
	if err := row.Scan(&w.ID, &w.OwnerID, &w.ChatID, &w.URL, &events, &w.Secret, &w.CreatedBy, &w.CreatedAt); err != nil {
		return store.Webhook{}, translate(err)
	}
	w.CreatedAt = utc(w.CreatedAt)
	if err := json.Unmarshal(events, &w.Events); err != nil {
		return store.Webhook{}, fmt.Errorf("decode events of webhook %s: %w", w.ID, err)
	}
	return w, nil
}

// WebhookInsert creates a webhook.
func (t *tx) WebhookInsert(ctx context.Context, w store.Webhook) (store.Webhook, error) {
	events, err := json.Marshal(w.Events)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("encode events: %w", err)
	}
	out, err := scanWebhook(t.tx.QueryRow(ctx,
		query.WebhookInsert,
		w.ID, w.OwnerID, w.ChatID, w.URL, events, w.Secret, w.CreatedBy, w.CreatedAt))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("insert webhook %s: %w", w.ID, err)
	}
	return out, nil
}

// WebhookGet reads a webhook.
func (t *tx) WebhookGet(ctx context.Context, id uuid.UUID) (store.Webhook, error) {
	w, err := scanWebhook(t.tx.QueryRow(ctx, query.WebhookGet, id))
	if err != nil {
		return store.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// WebhookList lists webhooks oldest first.
func (t *tx) WebhookList(ctx context.Context, p store.WebhookListParams) ([]store.Webhook, error) {
	var a args
	stmt := query.WebhookList
	if p.OwnerID.Valid {
		stmt += ` WHERE owner_id = ` + a.add(p.OwnerID.UUID)
	}
	stmt += ` ORDER BY created_at, id LIMIT ` + a.add(store.ListLimit(p.Limit))
	rows, err := t.tx.Query(ctx, stmt, a...)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", translate(err))
	}
	out, err := collect(rows, scanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// WebhookCountByOwner counts a user's webhooks.
func (t *tx) WebhookCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx, query.WebhookCountByOwner, ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count webhooks of user %s: %w", ownerID, translate(err))
	}
	return n, nil
}

// WebhookListForChat lists the webhooks that hear of a chat's events.
func (t *tx) WebhookListForChat(ctx context.Context, ownerID, chatID uuid.UUID) ([]store.Webhook, error) {
	rows, err := t.tx.Query(ctx, query.WebhookListForChat,
		ownerID, chatID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of chat %s: %w", chatID, translate(err))
	}
	out, err := collect(rows, scanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of chat %s: %w", chatID, err)
	}
	return out, nil
}

// WebhookDelete removes a webhook; its deliveries cascade.
func (t *tx) WebhookDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.WebhookDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete webhook %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

func scanDelivery(row pgx.Row) (store.WebhookDelivery, error) {
	var (
		d       store.WebhookDelivery
		payload string
	)
	if err := row.Scan(&d.Seq, &d.ID, &d.WebhookID, &d.ChatID, &d.Event, &payload, &d.Status, &d.Attempts, &d.NextAttemptAt,
		&d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt); err != nil {
		return store.WebhookDelivery{}, translate(err)
	}
	d.Payload = json.RawMessage(payload)
	d.NextAttemptAt, d.CreatedAt, d.DeliveredAt = utc(d.NextAttemptAt), utc(d.CreatedAt), utcPtr(d.DeliveredAt)
	return d, nil
}

// WebhookDeliveryInsert appends a pending delivery.
func (t *tx) WebhookDeliveryInsert(ctx context.Context, d store.WebhookDelivery) (store.WebhookDelivery, error) {
	out, err := scanDelivery(t.tx.QueryRow(ctx,
		query.WebhookDeliveryInsert,
		d.ID, d.WebhookID, d.ChatID, d.Event, string(d.Payload), d.NextAttemptAt, d.CreatedAt))
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("insert delivery %s: %w", d.ID, err)
	}
	return out, nil
}

// WebhookDeliveryList lists a webhook's deliveries, newest first.
func (t *tx) WebhookDeliveryList(ctx context.Context, webhookID uuid.UUID, limit int) ([]store.WebhookDelivery, error) {
	rows, err := t.tx.Query(ctx, query.WebhookDeliveryList, webhookID, store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", webhookID, translate(err))
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", webhookID, err)
	}
	return out, nil
}

// WebhookDeliveryListDue lists the due heads of each (webhook, chat).
func (t *tx) WebhookDeliveryListDue(ctx context.Context, now time.Time, limit int) ([]store.WebhookDelivery, error) {
	rows, err := t.tx.Query(ctx, query.WebhookDeliveryListDue, now, store.ListLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list due deliveries: %w", translate(err))
	}
	out, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("list due deliveries: %w", err)
	}
	return out, nil
}

// WebhookDeliveryNextDue reads the earliest next attempt.
func (t *tx) WebhookDeliveryNextDue(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	if err := t.tx.QueryRow(ctx, query.WebhookDeliveryNextDue).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next due delivery: %w", translate(err))
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
}

// WebhookDeliveryClaim takes a pending delivery for one attempt.
func (t *tx) WebhookDeliveryClaim(ctx context.Context, seq int64, due, until time.Time) (bool, error) {
	tag, err := t.tx.Exec(ctx, query.WebhookDeliveryClaim, until, seq, due)
	if err != nil {
		return false, fmt.Errorf("claim delivery %d: %w", seq, translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// WebhookDeliveryUpdate writes the set fields of p.
func (t *tx) WebhookDeliveryUpdate(ctx context.Context, seq int64, p store.WebhookDeliveryPatch) (store.WebhookDelivery, error) {
	var a args
	sets, err := setClause(p.Assignments(), &a)
	if err != nil || sets == "" {
		return store.WebhookDelivery{}, fmt.Errorf("update delivery %d: nothing to write (%v)", seq, err)
	}
	d, err := scanDelivery(t.tx.QueryRow(ctx,
		`UPDATE webhook_deliveries SET `+sets+` WHERE seq = `+a.add(seq)+` RETURNING `+query.DeliveryColumns, a...))
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("update delivery %d: %w", seq, err)
	}
	return d, nil
}
